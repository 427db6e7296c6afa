"""`grade batch` for real on a small cohort: every submission gets a row, results match `grade FILE`,
the summaries hold what the reports say.

One batch (core level, few examples) is graded once for the module; the tests read its
output folder. The cohort covers each way a submission can end: correct, buggy, cheating,
not Python, empty, not UTF-8, a folder with its entry file, a folder without it.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "tests" / "solutions"
FAST = ("--level", "core", "--max-examples", "5")
TIMING_KEYS = {"timings", "seconds", "backward_seconds"}

EXPECTED = {
    # id: (status, interview passed, a phrase of the message)
    "alice": ("graded", True, ""),
    "bob": ("graded", False, ""),
    "carol": ("integrity_violation", False, ""),
    "dana": ("graded", True, ""),
    "empty": ("error", False, "defines no class named 'Tensor'"),
    "eve": ("error", False, "no solution.py in the folder (it holds main.py; choose the file with --entry)"),
    "latin1": ("error", False, "not a Python source file (it is binary or not UTF-8 text)"),
    "not_python": ("error", False, "SyntaxError"),
    "notes": ("error", False, "not a Python file"),
}


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    subs = tmp_path_factory.mktemp("cohort") / "subs"
    subs.mkdir()
    shutil.copy(SOLUTIONS / "correct_core.py", subs / "alice.py")
    shutil.copy(SOLUTIONS / "overwrite_grad.py", subs / "bob.py")
    shutil.copy(SOLUTIONS / "cheat_autograd_grad.py", subs / "carol.py")
    (subs / "dana").mkdir()
    shutil.copy(SOLUTIONS / "correct_core.py", subs / "dana" / "solution.py")
    (subs / "empty.py").write_text("")
    (subs / "eve").mkdir()
    (subs / "eve" / "main.py").write_text("class Tensor: pass\n")
    (subs / "latin1.py").write_bytes("# caf\xe9\nclass Tensor: pass\n".encode("latin-1"))
    (subs / "not_python.py").write_text("This is my essay about autograd.\nIt has no code.\n")
    (subs / "notes.txt").write_text("my notes, not code\n")
    (subs / ".DS_Store").write_bytes(b"\0")
    return subs


@pytest.fixture(scope="module")
def batch_run(cohort, tmp_path_factory):
    out = tmp_path_factory.mktemp("batch") / "out"
    junit = out.parent / "junit.xml"
    result = invoke("batch", cohort, "-o", out, *FAST, "-j", "2", "--gradescope", "--junit", junit,
                    "--allow-basic-isolation")
    assert result.exit_code == 0, result.output
    return out, result


def test_every_submission_gets_a_row_with_its_status(batch_run):
    out, _ = batch_run
    summary = json.loads((out / "summary.json").read_text())
    rows = {row["id"]: row for row in summary["submissions"]}
    assert sorted(rows) == sorted(EXPECTED)
    for sid, (status, passed, phrase) in EXPECTED.items():
        assert (rows[sid]["status"], bool(rows[sid]["interview_passed"])) == (status, passed), sid
        assert phrase in rows[sid]["message"], (sid, rows[sid]["message"])
        assert (out / "results" / f"{sid}.json").is_file() and (out / "results" / f"{sid}.md").is_file()
    assert summary["complete"] is True and summary["pending"] == []
    assert summary["counts"]["total"] == 9 and summary["counts"]["error"] == 5


def test_a_result_is_what_grade_file_prints(batch_run, cohort):
    out, _ = batch_run
    for sid in ("bob", "not_python"):
        printed = invoke(cohort / f"{sid}.py", "--format", "json", *FAST)
        assert printed.exit_code in (1, 3)
        assert without_timings(json.loads((out / "results" / f"{sid}.json").read_text())) == \
            without_timings(json.loads(printed.stdout))


def test_a_folder_submission_is_graded_by_its_entry_file(batch_run, cohort):
    out, _ = batch_run
    dana = json.loads((out / "results" / "dana.json").read_text())
    alice = json.loads((out / "results" / "alice.json").read_text())
    assert dana["file"] == str(cohort / "dana" / "solution.py")
    assert dana["source_sha256"] == alice["source_sha256"]
    assert dana["score"] == alice["score"] == dana["max_score"] == 60


def test_csv_starts_with_the_maximum_and_adds_up(batch_run):
    out, _ = batch_run
    rows = list(csv.DictReader((out / "summary.csv").read_text().splitlines()))
    maximum, rows = rows[0], {row["id"]: row for row in rows[1:]}
    assert maximum["id"] == "(maximum)" and float(maximum["score"]) == 60 and float(maximum["core"]) == 60
    concept_columns = [c for c in maximum if c.startswith("concept:")]
    assert {"concept:accumulation", "concept:order"} <= set(concept_columns)
    # Each check's points are rounded to 0.01 in the JSON: sums may drift by half of that per check.
    drift = 0.005 * len(json.loads((out / "results" / "bob.json").read_text())["checks"])
    assert sum(float(maximum[c]) for c in concept_columns) == pytest.approx(60, abs=drift)
    bob = rows["bob"]
    assert sum(float(bob[c]) for c in concept_columns) == pytest.approx(float(bob["score"]), abs=drift)
    assert float(bob["concept:accumulation"]) == 0  # overwrites instead of accumulating
    assert bob["interview_passed"] == "no" and int(bob["checks_failed"]) > 0
    assert rows["alice"]["interview_passed"] == "yes" and rows["alice"]["checks_failed"] == "0"
    assert int(rows["carol"]["violations"]) > 0
    assert len(rows["alice"]["source_sha256"]) == 64 and float(rows["alice"]["seconds"]) > 0


def test_copies_are_reported_as_alike(batch_run):
    out, _ = batch_run
    pairs = json.loads((out / "summary.json").read_text())["similarity"]
    assert {"a": "alice", "b": "dana"} == {k: pairs[0][k] for k in ("a", "b")}
    assert pairs[0]["score"] == 1.0
    assert all(p["score"] >= 0.6 for p in pairs)


def test_gradescope_results_per_submission(batch_run):
    out, _ = batch_run
    for sid in EXPECTED:
        report = json.loads((out / "results" / f"{sid}.json").read_text())
        results = json.loads((out / "gradescope" / sid / "results.json").read_text())
        assert results["score"] == report["score"]
        assert len(results["tests"]) == len(report["checks"])
        tests = {test["name"].split(": ")[0]: test for test in results["tests"]}  # ordered by number, not as run
        for check in report["checks"]:
            test = tests[check["id"]]
            assert test["status"] == ("passed" if check["outcome"] == "passed" else "failed")
            assert {"name", "score", "max_score", "output", "visibility"} <= set(test)


def test_junit_has_a_case_per_check(batch_run):
    import xml.etree.ElementTree as ET

    out, _ = batch_run
    suites = {s.get("name"): s for s in ET.parse(out.parent / "junit.xml").getroot()}
    assert sorted(suites) == sorted(EXPECTED)
    bob = json.loads((out / "results" / "bob.json").read_text())
    assert len(suites["bob"]) == len(bob["checks"])
    assert int(suites["bob"].get("failures")) == sum(c["outcome"] == "failed" for c in bob["checks"])
    assert [case.get("name") for case in suites["empty"]] == ["grade"]


def test_piped_progress_prints_a_line_per_submission(batch_run):
    _, result = batch_run
    lines = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 9 and lines[-1].startswith("[9/9] ")
    assert "[1/9]" in lines[0]
    assert result.stdout.splitlines()[-1].startswith("report: ")


def test_an_output_folder_with_results_needs_resume(batch_run, cohort):
    out, _ = batch_run
    result = invoke("batch", cohort, "-o", out, *FAST, "--allow-basic-isolation")
    assert result.exit_code == 2
    assert result.stderr == (f"error: {out}: already holds batch results (add --resume to continue them, "
                             "or choose another folder)\n")


def test_the_page_lists_every_candidate_with_details(batch_run):
    out, _ = batch_run
    page = (out / "report.html").read_text()
    table = page[page.index('<table id="candidates">'):page.index("</table>")]
    for sid in EXPECTED:
        assert f'<a class="clip" href="#c-{sid}" title="{sid}">{sid}</a>' in table
        assert f'<section class="candidate" id="c-{sid}">' in page
    assert page.count("<tr data-status=") == len(EXPECTED)
