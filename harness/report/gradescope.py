"""Gradescope's ``results.json`` for one submission: one test per check, plain text only, with the
visibility each test gets.
"""

from __future__ import annotations

import fnmatch
import os
import re
from typing import Any, Sequence

from harness.report.candidate_view import candidate_view
from harness.report.decisions import Decided
from harness.report.model import CheckResult, Report
from harness.report.safety import printable
from harness.vocabulary import FAILING, LEVELS

__all__ = ["gradescope_results", "gradescope_output", "parse_visibility", "relative_snippets", "test_numbers",
           "check_text", "VISIBILITIES"]


def check_text(check: CheckResult) -> str:
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


def gradescope_results(report: Report, visibility: Sequence[tuple[str, str]] = (),
                       decided: Decided | None = None) -> dict[str, Any]:
    """A Gradescope ``results.json`` for one submission: one test per check, plain-text output only.

    The top-level output is what the student reads first: the score and the interview bar,
    then "Fix first" (the root causes with their explanation and hint), the integrity
    findings and the reason a file could not be graded. Snippets import the submission by
    its file name. ``visibility`` rules (``parse_visibility``) set each test's visibility; a hidden
    spec case's test is always ``hidden``, and nothing else shows it (``candidate_view``). With a
    person's decision (``decided``, from a batch), the score is the final one, and the output says a
    person set it; the reason and the comment stay with the interviewer.
    """
    tests = []
    for c, number in zip(report.checks, test_numbers(report.checks)):
        text = check_text(c) if c.outcome in FAILING else c.message
        tests.append({
            "name": f"{c.id}: {c.title}",
            "number": number,
            "score": round(c.points, 2),
            "max_score": round(c.max_points, 2),
            "status": "passed" if c.outcome == "passed" else "failed",
            "output": relative_snippets(printable(text)),
            "output_format": "text",
            "visibility": "hidden" if c.hidden else _visibility(c, visibility),
            "tags": [c.level, c.concept],
            "execution_time": round(c.seconds, 3),
        })
    tests.sort(key=lambda t: tuple(int(part) for part in t["number"].split(".")))
    score = decided.final_score if decided is not None and decided.score_set else round(report.score, 2)
    return {
        "score": score,
        "max_score": round(report.max_score, 2),
        "execution_time": round(report.timings.get("wall", report.timings.get("total", 0.0)), 3),
        "output": relative_snippets(printable(gradescope_output(candidate_view(report), decided))),
        "output_format": "text",
        "test_output_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }


def test_numbers(checks: Sequence[CheckResult]) -> list[str]:
    """Gradescope's ``number`` for each check (``1.2.3``: level, concept within it, check within that), which
    orders a student's page by level and groups each concept's checks together."""
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


def gradescope_output(report: Report, decided: Decided | None = None) -> str:
    """The top of a student's Gradescope page, in plain text (with a person's decision, when there is one)."""
    # Rounded as the JSON report is first: the page reads the same from a report and from its JSON.
    lines = [f"{report.status}: score {round(report.score, 2):.1f} of {round(report.max_score, 2):.1f}"]
    if decided is not None and decided.score_set:
        lines[0] = (f"{report.status}: score {decided.final_score:.1f} of {round(report.max_score, 2):.1f}, set by "
                    f"the interviewer (the checks gave {decided.automatic_score:.1f})")
    interview = report.interview
    if interview is not None:
        passed = decided.interview_passed if decided is not None and decided.applies else interview.passed
        verdict = "passed" if passed else "not passed"
        why = [f"core {interview.core_score:.1f} of {interview.bar:.1f} needed"]
        if interview.gates_failed:
            why.append("gates failed: " + ", ".join(map(str, interview.gates_failed)))
        if decided is not None and decided.bar_set:
            why = ["decided by the interviewer"]
        elif interview.needs_review and (decided is None or decided.needs_review):
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
            lines.append(f"{i}. {cause.title} ({len(checks)} failing check{'s' if len(checks) != 1 else ''})")
            if cause.explanation:
                lines.append(f"   {cause.explanation}")
            if cause.hint:
                lines.append(f"   hint: {cause.hint}")
            if i == 1 and cause.snippet:
                lines += ["   reproduce:", *(f"     {line}" for line in cause.snippet.splitlines())]
    return "\n".join(lines)
