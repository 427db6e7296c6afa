"""Every format in the registries, rendered from one small hand-built report (and a batch's formats from a
made-up cohort, read back from JSON as a batch reads its rows).

``CHECKED`` and ``BATCH_CHECKED`` hold what each format must show; a format added to ``FORMATS`` or
``BATCH_FORMATS`` without an entry here fails ``test_every_format_is_checked``.
"""

import csv
import io
import json
import xml.etree.ElementTree as ET

import pytest
from made_up_cohort import cohort

from harness.report.files import SUFFIXES, write_formats
from harness.report.formats import BATCH_FORMATS, FORMATS, Cohort, render
from harness.report.model import CheckResult, Report
from harness.report.summary import summarise

REPORT = Report(
    file="solution.py", status="graded", score=6.0, max_score=10.0,
    levels={"core": {"score": 6.0, "max_score": 10.0}},
    checks=(CheckResult("core.add", "core", "accumulation", "Addition has the right gradient.", "passed",
                        points=6.0, max_points=6.0),
            CheckResult("core.mul", "core", "accumulation", "Multiplication has the right gradient.", "failed",
                        "grad of a is wrong at [0, 1]", points=0.0, max_points=4.0),
            CheckResult("spec:core.secret", "core", "accumulation", "A case the candidate never sees.", "failed",
                        "secret case failed", points=0.0, max_points=0.0, hidden=True)),
)


def _text(out: str) -> None:
    assert "core.mul" in out and "grad of a is wrong at [0, 1]" in out
    assert "6" in out and "10" in out


def _json(out: str) -> None:
    data = json.loads(out)
    assert [c["outcome"] for c in data["checks"]] == ["passed", "failed", "failed"]
    assert [c.get("hidden", False) for c in data["checks"]] == [False, False, True]
    assert (data["score"], data["max_score"]) == (6.0, 10.0)


def _markdown(out: str) -> None:
    assert out.lstrip().startswith("#")
    assert "core.mul" in out and "|" in out


def _gradescope(out: str) -> None:
    data = json.loads(out)
    assert (data["score"], data["max_score"]) == (6.0, 10.0)
    assert [(t["name"].split(": ")[0], t["status"], t["score"], t["max_score"]) for t in data["tests"]] == [
        ("core.add", "passed", 6.0, 6.0), ("core.mul", "failed", 0.0, 4.0), ("spec:core.secret", "failed", 0.0, 0.0)]
    assert data["tests"][1]["visibility"] == "hidden"  # the --visibility rule below
    assert data["tests"][2]["visibility"] == "hidden"  # a hidden case, whatever the rules say


def _feedback(out: str) -> None:
    assert out.lstrip().startswith("#") and "core.mul" in out
    assert "secret" not in out  # the hidden case is never in what the candidate reads


CHECKED = {"text": _text, "json": _json, "markdown": _markdown, "gradescope": _gradescope, "feedback": _feedback}


def _csv(out: str) -> None:
    rows = list(csv.reader(io.StringIO(out)))
    assert [row[:4] for row in rows[1:3]] == [["(maximum)", "", "10.0", "10.0"], ["ada", "graded", "10.0", "10.0"]]


def _gradebook(out: str) -> None:
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [row["candidate"] for row in rows] == ["ada", "bert", "cleo", "dmitri", "=evil"][:4] + ["'=evil"]
    assert (rows[1]["final_score"], rows[1]["automatic_score"], rows[1]["max_score"]) == ("4.0", "4.0", "10.0")
    assert rows[0]["interview_bar"] == "passed" and rows[1]["interview_bar"] == "not passed"


def _html(out: str) -> None:
    assert out.startswith("<!doctype html>") and 'id="c-bert"' in out and "overwrite instead of accumulate" in out


def _junit(out: str) -> None:
    suites = {s.get("name"): s for s in ET.fromstring(out.encode())}
    assert (suites["bert"].get("tests"), suites["bert"].get("failures")) == ("2", "1")
    assert suites["=evil"].find("testcase").get("name") == "grade"  # a row that was not graded: one error


BATCH_CHECKED = {"csv": _csv, "gradebook": _gradebook, "html": _html, "junit": _junit}


def test_every_format_is_checked():
    assert set(CHECKED) == set(FORMATS)
    assert set(BATCH_CHECKED) == set(BATCH_FORMATS)


@pytest.mark.parametrize("name", sorted(BATCH_FORMATS))
def test_batch_format_renders_the_cohort(name):
    reports = cohort()
    BATCH_CHECKED[name](BATCH_FORMATS[name].render(Cohort(summarise(reports, settings={}), reports)))


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_format_renders_the_report(name):
    CHECKED[name](render(REPORT, name, visibility=(("core.mul", "hidden"),)))


def test_output_dir_writes_every_format_with_a_suffix(tmp_path):
    paths = write_formats(REPORT, tmp_path, "solution")
    assert sorted(p.name for p in paths) == ["solution.json", "solution.md", "solution.txt"]
    assert SUFFIXES == {"text": ".txt", "json": ".json", "markdown": ".md"}
    _json((tmp_path / "solution.json").read_text())
