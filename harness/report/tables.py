"""A batch as tables: the summary as CSV, the gradebook an LMS imports, and JUnit XML.

Everything here reads the summary (``report.summary``) and the ``Report``s it summarises.
Candidate text is escaped for each format: formulas in CSV, markup in XML.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET
from typing import Any, Mapping

from harness.report.gradescope import VISIBILITIES, check_text, parse_visibility
from harness.report.model import Report
from harness.report.safety import one_line
from harness.vocabulary import LEVELS

__all__ = ["render_csv", "render_gradebook", "render_junit", "CSV_COLUMNS", "GRADEBOOK_COLUMNS", "parse_visibility",
           "VISIBILITIES"]


CSV_COLUMNS = ("id", "status", "score", "max_score", "final_score", "interview_passed", "needs_review",
               "gates_failed", "review_flags", "violations", "checks_failed")
"""The fixed leading columns; per-level and per-concept points, root causes, the decision and comment, hash,
duration and message follow. ``score`` is the grader's; ``final_score`` the one a person's decision set (or the
grader's when nobody decided)."""

GRADEBOOK_COLUMNS = ("candidate", "final_score", "automatic_score", "max_score", "interview_bar", "decision",
                     "comment", "status")
"""``gradebook.csv``: what an LMS imports (Canvas, Moodle: map ``candidate`` to the student, ``final_score`` to the
grade), one row per candidate."""

CELL_CHARS = 300
"""The longest text cell: a spreadsheet row stays one line on a screen (the whole text is in summary.json)."""


def render_csv(summary: Mapping[str, Any]) -> str:
    """The summary as CSV: a header, then the maximum points, then one row per submission; every cell one line."""
    levels = [level for level in LEVELS if level in summary["maximum"]["levels"]]
    concepts = sorted(summary["maximum"]["concepts"])
    header = [*CSV_COLUMNS, *levels, *(f"concept:{c}" for c in concepts), "root_causes", "decision", "comment",
              "source_sha256", "seconds", "message"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    maximum = summary["maximum"]
    top = _points(maximum["score"])
    writer.writerow(["(maximum)", "", top, top, top, "", "", "", "", "", "",
                     *(_points(maximum["levels"][level]) for level in levels),
                     *(_points(maximum["concepts"][c]) for c in concepts), "", "", "", "", "", ""])
    for row in summary["submissions"]:
        decision = row.get("decision") or {}
        writer.writerow([
            _cell(row["id"]), row["status"], _points(row["score"]), _points(row["max_score"]),
            _points(row.get("final_score", row["score"])), _flag(row["interview_passed"]),
            _flag(row["needs_review"]), _cell(";".join(row["gates_failed"])), row["review_flags"], row["violations"],
            row["checks_failed"],
            *(_points(row["levels"].get(level)) for level in levels),
            *(_points(row["concepts"].get(c)) for c in concepts),
            _cell(";".join(row["root_causes"])), _cell(decision.get("text", "")), _cell(row.get("comment", "")),
            row["source_sha256"], row["seconds"], _cell(row["message"]),
        ])
    return out.getvalue()


def render_gradebook(summary: Mapping[str, Any]) -> str:
    """``gradebook.csv``: per candidate the final and automatic score, the maximum, the interview bar, the
    decision and the comment, for an LMS to import."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(GRADEBOOK_COLUMNS)
    for row in summary["submissions"]:
        decision = row.get("decision") or {}
        passed = row["interview_passed"]
        writer.writerow([
            _cell(row["id"]), _points(row.get("final_score", row["score"])), _points(row["score"]),
            _points(row["max_score"]), "" if passed is None else ("passed" if passed else "not passed"),
            _cell(decision.get("text", "")), _cell(row.get("comment", "")), row["status"],
        ])
    return out.getvalue()


def _points(value: Any) -> str:
    """Points as the JSON rounds them, always with a decimal point; empty where a row has none."""
    return "" if value is None else str(round(float(value), 2))


def _flag(value: Any) -> str:
    return "" if value is None else ("yes" if value else "no")


def _cell(text: Any) -> str:
    """Text for one cell: its first line, escaped and at most ``CELL_CHARS`` long ("[...]" says more is in the JSON),
    shown by a spreadsheet as text (a leading = + - @, a formula to Excel and its kin, gets a quote first)."""
    lines = [line for line in str(text).splitlines() if line.strip()]
    shown = one_line(lines[0].strip()) if lines else ""
    if len(lines) > 1 or len(shown) > CELL_CHARS:
        shown = shown[:CELL_CHARS - 6].rstrip() + " [...]"
    return "'" + shown if shown[:1] in ("=", "+", "-", "@") else shown


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
                ET.SubElement(case, "failure", type="failed", message=message).text = _xml_text(check_text(c))
            elif c.outcome in ("error", "timeout"):
                ET.SubElement(case, "error", type=c.outcome, message=message).text = _xml_text(check_text(c))
            elif c.outcome in ("not_attempted", "skipped"):
                ET.SubElement(case, "skipped", message=message)
            cases.append(c.outcome)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(cases.count("failed")))
        suite.set("errors", str(sum(o in ("error", "timeout") for o in cases)))
        suite.set("skipped", str(sum(o in ("not_attempted", "skipped") for o in cases)))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
