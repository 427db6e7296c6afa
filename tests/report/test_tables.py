"""Summary, CSV, JUnit and Gradescope from JSON reports: the numbers add up and candidate text stays text."""

import csv
import io
import json
import xml.etree.ElementTree as ET

from made_up_cohort import HOSTILE, cohort

from harness.report.gradescope import gradescope_results
from harness.report.summary import summarise
from harness.report.tables import render_csv, render_junit


def _summary():
    reports = cohort()
    return summarise(reports, settings={"level": "core"}, similarity=[{"a": "ada", "b": "cleo", "score": 1.0,
                                                                       "shared": 9}]), reports


def test_rows_follow_the_reports():
    summary, _ = _summary()
    rows = {r["id"]: r for r in summary["submissions"]}
    assert list(rows) == ["ada", "bert", "cleo", "dmitri", "=evil"]
    assert (rows["ada"]["score"], rows["ada"]["interview_passed"], rows["ada"]["concepts"]) == (
        10, True, {"accumulation": 6, "order": 4})
    assert (rows["bert"]["score"], rows["bert"]["checks_failed"], rows["bert"]["root_causes"]) == (
        4, 1, ["overwrite", "order failures around x0 + x1"])
    assert (rows["cleo"]["review_flags"], rows["cleo"]["needs_review"], rows["cleo"]["interview_passed"]) == (
        1, True, False)
    assert rows["dmitri"]["violations"] == 1
    assert summary["counts"] == {"graded": 3, "error": 1, "timeout": 0, "integrity_violation": 1, "total": 5,
                                 "interview_passed": 1, "needs_review": 1, "pending": 0}
    assert summary["maximum"] == {"score": 10, "levels": {"core": 10}, "concepts": {"accumulation": 6, "order": 4}}


def test_concept_rates_count_graded_candidates_only():
    summary, _ = _summary()
    # graded: ada, bert, cleo; bert fails accumulation; dmitri (violation) and =evil are not counted
    assert summary["concepts"]["accumulation"] == {"candidates": 3, "all_passed": 2, "checks": 3,
                                                   "checks_passed": 2, "pass_rate": 0.667, "check_pass_rate": 0.667}
    assert summary["concepts"]["order"]["pass_rate"] == 1.0
    assert list(summary["concepts"]) == ["accumulation", "order"]  # most missed first


def test_csv_first_row_is_the_maximum_and_formulas_are_defused():
    summary, _ = _summary()
    rows = list(csv.reader(io.StringIO(render_csv(summary))))
    header, maximum = rows[0], rows[1]
    assert header[:10] == ["id", "status", "score", "max_score", "interview_passed", "needs_review", "gates_failed",
                           "review_flags", "violations", "checks_failed"]
    assert header[10:] == ["core", "concept:accumulation", "concept:order", "root_causes", "source_sha256",
                           "seconds", "message"]
    assert maximum[:4] == ["(maximum)", "", "10.0", "10.0"] and maximum[10:13] == ["10.0", "6.0", "4.0"]
    evil = rows[-1]
    assert evil[0] == "'=evil"  # a spreadsheet shows it as text instead of running it
    assert evil[1] == "error" and evil[-1].startswith("importing raised <img")
    assert len({len(r) for r in rows}) == 1


def test_junit_parses_and_holds_no_control_characters():
    summary, reports = _summary()
    text = render_junit(summary, reports)
    root = ET.fromstring(text.encode())
    suites = {s.get("name"): s for s in root}
    assert list(suites) == ["ada", "bert", "cleo", "dmitri", "=evil"]
    bert = suites["bert"]
    assert (bert.get("tests"), bert.get("failures"), bert.get("errors")) == ("2", "1", "0")
    failure = bert.find("testcase/failure")
    assert HOSTILE in failure.text and "hint: accumulate with +=" in failure.text
    assert [c.get("name") for c in suites["dmitri"]][0] == "grade"
    assert suites["=evil"].find("testcase/error").get("message") == f"importing raised {HOSTILE}\ufffd"
    assert "\x01" not in text and "\x00" not in text


def test_gradescope_results_carry_points_and_plain_text():
    _, reports = _summary()
    results = gradescope_results(reports["bert"])
    assert (results["score"], results["max_score"], results["output_format"]) == (4, 10, "text")
    assert [(t["status"], t["score"], t["max_score"]) for t in results["tests"]] == [("failed", 0, 6),
                                                                                      ("passed", 4, 4)]
    assert "reproduce:" in results["tests"][0]["output"] and results["tests"][0]["output_format"] == "text"
    json.dumps(results)
    evil = gradescope_results(reports["=evil"])
    assert evil["tests"] == [] and evil["score"] == 0 and "importing raised" in evil["output"]
