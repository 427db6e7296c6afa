"""A batch as tables: the summary (one row per submission), CSV, JUnit XML and Gradescope results.

Everything here reads ``Report``s; a batch reads them back from its ``results/`` folder
(``Report.from_dict``), so a resumed batch renders results it did not grade itself.
Candidate text is escaped for each format: formulas in CSV, markup in XML.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Iterable, Mapping, Sequence

from harness.report.model import CheckResult, Report
from harness.report.safety import printable
from harness.vocabulary import FAILING, LEVELS

__all__ = ["summarise", "summary_row", "render_csv", "render_junit", "gradescope_results", "gradescope_output",
           "parse_visibility", "relative_snippets", "CSV_COLUMNS", "VISIBILITIES"]


CSV_COLUMNS = ("id", "status", "score", "max_score", "interview_passed", "needs_review", "gates_failed",
               "review_flags", "violations", "checks_failed")
"""The fixed leading columns; per-level and per-concept points, root causes, hash, duration and message follow."""


def summary_row(sid: str, report: Report) -> dict[str, Any]:
    """One submission's line of the summary (as JSON rounds it: a row read back from JSON is the same)."""
    interview = report.interview
    concepts: dict[str, float] = {}
    for c in report.checks:
        concepts[c.concept] = round(concepts.get(c.concept, 0.0) + round(c.points, 2), 2)
    timings = {k: round(v, 3) for k, v in report.timings.items()}
    return {
        "id": sid,
        "file": report.file,
        "status": report.status,
        "message": report.message,
        "score": round(report.score, 2),
        "max_score": round(report.max_score, 2),
        "interview_passed": interview.passed if interview is not None else None,
        "needs_review": interview.needs_review if interview is not None else False,
        "gates_failed": list(interview.gates_failed) if interview is not None else [],
        "review_flags": len(report.integrity_review),
        "violations": len(report.integrity_violations),
        "checks_failed": sum(c.outcome in FAILING for c in report.checks),
        "levels": {level: round(v["score"], 2) for level, v in report.levels.items()},
        "concepts": concepts,
        # a catalogued bug by its id; a failure no catalogued bug explains by its name
        "root_causes": [str(cause.key or "") for cause in report.root_causes],
        "source_sha256": report.source_sha256,
        "seconds": timings.get("wall", timings.get("total", 0.0)),
    }


def summarise(reports: Mapping[str, Report], *, settings: Mapping[str, Any],
              similarity: Sequence[Mapping[str, Any]] = (), pending: Sequence[str] = ()) -> dict[str, Any]:
    """The summary of a batch: its settings, the maximum row, one row per report (in the given order),
    per-concept pass rates over the graded submissions, similar pairs, and what was left ungraded."""
    rows = [summary_row(sid, report) for sid, report in reports.items()]
    maximum: dict[str, Any] = {"score": 0.0, "levels": {}, "concepts": {}}
    for report in reports.values():
        maximum["score"] = max(maximum["score"], round(report.max_score, 2))
        for level, v in report.levels.items():
            maximum["levels"][level] = max(maximum["levels"].get(level, 0.0), round(v["max_score"], 2))
        per_concept: dict[str, float] = {}
        for c in report.checks:
            per_concept[c.concept] = per_concept.get(c.concept, 0.0) + round(c.max_points, 2)
        for concept, points in per_concept.items():
            maximum["concepts"][concept] = round(max(maximum["concepts"].get(concept, 0.0), points), 2)
    counts = {status: sum(r["status"] == status for r in rows)
              for status in ("graded", "error", "timeout", "integrity_violation")}
    counts.update(total=len(rows), interview_passed=sum(bool(r["interview_passed"]) for r in rows),
                  needs_review=sum(bool(r["needs_review"]) or r["review_flags"] > 0 for r in rows),
                  pending=len(pending))
    return {
        "settings": dict(settings),
        "complete": not pending,
        "pending": list(pending),
        "counts": counts,
        "maximum": maximum,
        "submissions": rows,
        "concepts": concept_rates(reports.values()),
        "similarity": [dict(pair) for pair in similarity],
    }


def concept_rates(reports: Iterable[Report]) -> dict[str, dict[str, Any]]:
    """Per concept over the graded submissions: how many passed every check of it, and the share of its checks passed.

    A check not attempted counts as not passed: a cohort that skips a concept misses it.
    """
    rates: dict[str, dict[str, Any]] = {}
    graded = [r for r in reports if r.status == "graded"]
    for report in graded:
        by_concept: dict[str, list[str]] = {}
        for c in report.checks:
            by_concept.setdefault(c.concept, []).append(c.outcome)
        for concept, outcomes in by_concept.items():
            entry = rates.setdefault(concept, {"candidates": 0, "all_passed": 0, "checks": 0, "checks_passed": 0})
            entry["candidates"] += 1
            entry["all_passed"] += all(o == "passed" for o in outcomes)
            entry["checks"] += len(outcomes)
            entry["checks_passed"] += sum(o == "passed" for o in outcomes)
    for entry in rates.values():
        entry["pass_rate"] = round(entry["all_passed"] / entry["candidates"], 3)
        entry["check_pass_rate"] = round(entry["checks_passed"] / entry["checks"], 3) if entry["checks"] else 0.0
    return dict(sorted(rates.items(), key=lambda kv: (kv[1]["pass_rate"], kv[0])))


def render_csv(summary: Mapping[str, Any]) -> str:
    """The summary as CSV: a header, then the maximum points, then one row per submission."""
    levels = [level for level in LEVELS if level in summary["maximum"]["levels"]]
    concepts = sorted(summary["maximum"]["concepts"])
    header = [*CSV_COLUMNS, *levels, *(f"concept:{c}" for c in concepts), "root_causes", "source_sha256",
              "seconds", "message"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    maximum = summary["maximum"]
    writer.writerow(["(maximum)", "", _points(maximum["score"]), _points(maximum["score"]), "", "", "", "", "", "",
                     *(_points(maximum["levels"][level]) for level in levels),
                     *(_points(maximum["concepts"][c]) for c in concepts), "", "", "", ""])
    for row in summary["submissions"]:
        writer.writerow([
            _cell(row["id"]), row["status"], _points(row["score"]), _points(row["max_score"]),
            _flag(row["interview_passed"]),
            _flag(row["needs_review"]), _cell(";".join(row["gates_failed"])), row["review_flags"], row["violations"],
            row["checks_failed"],
            *(_points(row["levels"].get(level)) for level in levels),
            *(_points(row["concepts"].get(c)) for c in concepts),
            _cell(";".join(row["root_causes"])), row["source_sha256"], row["seconds"], _cell(row["message"]),
        ])
    return out.getvalue()


def _points(value: Any) -> str:
    """Points as the JSON rounds them, always with a decimal point; empty where a row has none."""
    return "" if value is None else str(round(float(value), 2))


def _flag(value: Any) -> str:
    return "" if value is None else ("yes" if value else "no")


def _cell(text: str) -> str:
    """Text a spreadsheet shows as text: a leading = + - @ (a formula to Excel and its kin) gets a quote first."""
    text = str(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: Any) -> str:
    """Text that XML 1.0 can hold: characters it forbids become U+FFFD."""
    return _XML_ILLEGAL.sub("\ufffd", str(text))


def render_junit(summary: Mapping[str, Any], reports: Mapping[str, Report]) -> str:
    """JUnit XML: one test suite per submission, one test case per check.

    A submission that could not be graded (or broke integrity) is one test case of
    its own, ``grade``, with an error saying why.
    """
    suites = ET.Element("testsuites", name="grade batch")
    for row in summary["submissions"]:
        report = reports[row["id"]]
        suite = ET.SubElement(suites, "testsuite", name=_xml_text(row["id"]))
        cases = []
        if report.status != "graded":
            case = ET.SubElement(suite, "testcase", classname=_xml_text(row["id"]), name="grade")
            why = report.message or "; ".join(report.integrity_violations) or report.status
            ET.SubElement(case, "error", type=report.status, message=_xml_text(why.splitlines()[0] if why else ""))
            cases.append("error")
        for c in report.checks:
            case = ET.SubElement(suite, "testcase", classname=_xml_text(f"{row['id']}.{c.level}"),
                                 name=_xml_text(c.id), time=f"{round(c.seconds, 3):.3f}")
            message = _xml_text(c.message.splitlines()[0] if c.message else c.outcome)
            if c.outcome == "failed":
                ET.SubElement(case, "failure", type="failed", message=message).text = _xml_text(_check_text(c))
            elif c.outcome in ("error", "timeout"):
                ET.SubElement(case, "error", type=c.outcome, message=message).text = _xml_text(_check_text(c))
            elif c.outcome in ("not_attempted", "skipped"):
                ET.SubElement(case, "skipped", message=message)
            cases.append(c.outcome)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(cases.count("failed")))
        suite.set("errors", str(sum(o in ("error", "timeout") for o in cases)))
        suite.set("skipped", str(sum(o in ("not_attempted", "skipped") for o in cases)))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _check_text(check: CheckResult) -> str:
    """A failing check's message, worst element, snippet and hint as plain text."""
    lines = [check.message]
    details = check.details
    worst = details.get("worst") or {}
    if worst.get("index") is not None:
        lines.append(f"worst element {worst.get('index')}: got {worst.get('got')}, expected {worst.get('expected')}")
    if details.get("snippet"):
        lines += ["reproduce:", str(details["snippet"])]
    if details.get("hint"):
        lines.append(f"hint: {details['hint']}")
    return "\n".join(lines)


VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
"""What Gradescope accepts for a test's visibility."""


def parse_visibility(rules: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``PATTERN=VISIBILITY`` rules (``extensions=after_published``, ``core.order*=hidden``) as pairs;
    raises ValueError naming a bad one."""
    pairs = []
    for rule in rules:
        pattern, sep, visibility = rule.partition("=")
        if not sep or not pattern or visibility not in VISIBILITIES:
            raise ValueError(f"{rule!r}: a visibility rule is PATTERN=VISIBILITY, VISIBILITY one of "
                             f"{', '.join(VISIBILITIES)}")
        pairs.append((pattern, visibility))
    return tuple(pairs)


def _visibility(check: CheckResult, rules: Sequence[tuple[str, str]]) -> str:
    """The last rule whose pattern matches the check's id, level or concept decides; visible by default."""
    chosen = "visible"
    for pattern, visibility in rules:
        if any(fnmatch.fnmatchcase(key, pattern) for key in (check.id, check.level, check.concept)):
            chosen = visibility
    return chosen


_SNIPPET_PATH = re.compile(r"(runpy\.run_path\(|json\.load\(open\()(['\"])(.*?)\2")


def relative_snippets(text: str) -> str:
    """Snippets that import the submission by its file name, as the student has it, instead of by the
    grading machine's path."""
    return _SNIPPET_PATH.sub(lambda m: f"{m.group(1)}{os.path.basename(m.group(3))!r}", text)


def gradescope_results(report: Report, visibility: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """A Gradescope ``results.json`` for one submission: one test per check, plain-text output only.

    The top-level output is what the student reads first: the score and the interview bar,
    then "Fix first" (the root causes with their explanation and hint), the integrity
    findings and the reason a file could not be graded. Snippets import the submission by
    its file name. ``visibility`` rules (``parse_visibility``) set each test's visibility.
    """
    tests = []
    for c, number in zip(report.checks, test_numbers(report.checks)):
        text = _check_text(c) if c.outcome in FAILING else c.message
        tests.append({
            "name": f"{c.id}: {c.title}",
            "number": number,
            "score": round(c.points, 2),
            "max_score": round(c.max_points, 2),
            "status": "passed" if c.outcome == "passed" else "failed",
            "output": relative_snippets(printable(text)),
            "output_format": "text",
            "visibility": _visibility(c, visibility),
            "tags": [c.level, c.concept],
            "execution_time": round(c.seconds, 3),
        })
    return {
        "score": round(report.score, 2),
        "max_score": round(report.max_score, 2),
        "execution_time": round(report.timings.get("wall", report.timings.get("total", 0.0)), 3),
        "output": relative_snippets(printable(gradescope_output(report))),
        "output_format": "text",
        "test_output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def test_numbers(checks: Sequence[CheckResult]) -> list[str]:
    """Gradescope's ``number`` for each check (``1.2.3``: level, concept within it, check within that), by which
    Gradescope orders a student's page: by level, each concept's checks together. The tests themselves stay
    in the report's order."""
    concepts: dict[str, list[str]] = {}
    within: dict[tuple[str, str], int] = {}
    numbers = []
    for c in checks:
        level = LEVELS.index(c.level) + 1 if c.level in LEVELS else len(LEVELS) + 1
        order = concepts.setdefault(c.level, [])
        if c.concept not in order:
            order.append(c.concept)
        key = (c.level, c.concept)
        within[key] = within.get(key, 0) + 1
        numbers.append(f"{level}.{order.index(c.concept) + 1}.{within[key]}")
    return numbers


def gradescope_output(report: Report) -> str:
    """The top of a student's Gradescope page, in plain text."""
    # Rounded as the JSON report is first: the page reads the same from a report and from its JSON.
    lines = [f"{report.status}: score {round(report.score, 2):.1f} of {round(report.max_score, 2):.1f}"]
    interview = report.interview
    if interview is not None:
        verdict = "passed" if interview.passed else "not passed"
        why = [f"core {interview.core_score:.1f} of {interview.bar:.1f} needed"]
        if interview.gates_failed:
            why.append("gates failed: " + ", ".join(map(str, interview.gates_failed)))
        if interview.needs_review:
            why.append("needs a person's review")
        lines.append(f"interview bar: {verdict} ({'; '.join(why)})")
    if report.message:
        lines += ["", report.message]
    violations = report.integrity_violations
    if violations:
        lines += ["", "integrity violation (the score is 0): torch's autograd was used"]
        lines += [f"  - {v}" for v in violations]
    causes = report.root_causes
    if causes:
        lines += ["", "Fix first"]
        for i, cause in enumerate(causes, 1):
            checks = list(cause.checks)
            lines.append(f"{i}. {cause.name} ({len(checks)} failing check{'s' if len(checks) != 1 else ''})")
            if cause.explanation:
                lines.append(f"   {cause.explanation}")
            if cause.hint:
                lines.append(f"   hint: {cause.hint}")
            if i == 1 and cause.snippet:
                lines += ["   reproduce:", *(f"     {line}" for line in cause.snippet.splitlines())]
    return "\n".join(lines)
