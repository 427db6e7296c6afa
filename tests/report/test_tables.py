"""CSV, the gradebook and JUnit from a summary of JSON reports: the numbers add up, every cell is one line, and
candidate text stays text."""

import csv
import dataclasses
import io
import xml.etree.ElementTree as ET

from made_up_cohort import HOSTILE, cohort

from harness.report.decisions import Decision
from harness.report.summary import summarise
from harness.report.tables import render_csv, render_gradebook, render_junit


def _summary():
    reports = cohort()
    return summarise(reports, settings={"level": "core"}, similarity=[{"a": "ada", "b": "cleo", "score": 1.0,
                                                                       "shared": 9}]), reports


def test_csv_first_row_is_the_maximum_and_formulas_are_defused():
    summary, _ = _summary()
    rows = list(csv.reader(io.StringIO(render_csv(summary))))
    header, maximum = rows[0], rows[1]
    assert header[:11] == ["id", "status", "score", "max_score", "final_score", "interview_passed", "needs_review",
                           "gates_failed", "review_flags", "violations", "checks_failed"]
    assert header[11:] == ["core", "concept:accumulation", "concept:order", "root_causes", "decision", "comment",
                           "source_sha256", "seconds", "message"]
    assert maximum[:5] == ["(maximum)", "", "10.0", "10.0", "10.0"] and maximum[11:14] == ["10.0", "6.0", "4.0"]
    evil = rows[-1]
    assert evil[0] == "'=evil"  # a spreadsheet shows it as text instead of running it
    assert evil[1] == "error" and evil[-1].startswith("importing raised <img")
    assert len({len(r) for r in rows}) == 1


def test_every_csv_cell_is_one_line():
    reports = cohort()
    reports["=evil"] = dataclasses.replace(reports["=evil"], message="Traceback (most recent call last):\n  File x\n"
                                           "ValueError: boom\r\nmore")
    decisions = {"bert": _decision(reports["bert"], score=5.0, because="said why\non two lines",
                                   comment="=1+1\nand a second line")}
    summary = summarise(reports, settings={}, decisions=decisions)
    for text in (render_csv(summary), render_gradebook(summary)):
        assert len(text.splitlines()) == len(list(csv.reader(io.StringIO(text))))  # no cell spans lines
    rows = {r[0]: r for r in csv.reader(io.StringIO(render_csv(summary)))}
    assert rows["'=evil"][-1] == "Traceback (most recent call last): [...]"  # the full text is in summary.json
    gradebook = {r["candidate"]: r for r in csv.DictReader(io.StringIO(render_gradebook(summary)))}
    assert gradebook["bert"]["comment"] == "'=1+1 [...]"


def _decision(report, **fields) -> Decision:
    return Decision(decided_at="2025-05-01T10:00:00+00:00", by="ann", source_sha256=report.source_sha256,
                    automatic_score=report.score, max_score=report.max_score, **fields)


def test_the_gradebook_has_a_row_per_candidate_with_the_final_score_beside_the_comment():
    reports = cohort()
    decisions = {"bert": _decision(reports["bert"], score=7.5, because="explained the fix aloud",
                                   comment="knew accumulation once asked"),
                 "cleo": _decision(reports["cleo"], accept_review=True)}
    rows = list(csv.DictReader(io.StringIO(render_gradebook(summarise(reports, settings={}, decisions=decisions)))))
    assert list(rows[0]) == ["candidate", "final_score", "automatic_score", "max_score", "interview_bar", "decision",
                             "comment", "status"]
    by_id = {r["candidate"]: r for r in rows}
    assert len(rows) == 5 and set(by_id) == {"ada", "bert", "cleo", "dmitri", "'=evil"}
    bert = by_id["bert"]
    assert (bert["final_score"], bert["automatic_score"], bert["max_score"]) == ("7.5", "4.0", "10.0")
    assert bert["comment"] == "knew accumulation once asked"
    assert bert["decision"].startswith("score set to 7.5 (automatic 4.0); because explained the fix aloud (ann, ")
    # cleo scored 10 of 10 but held the bar for review; once the review is read the bar follows the score
    assert (by_id["cleo"]["interview_bar"], by_id["cleo"]["final_score"]) == ("passed", "10.0")
    assert (by_id["ada"]["final_score"], by_id["ada"]["decision"], by_id["ada"]["comment"]) == ("10.0", "", "")



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
