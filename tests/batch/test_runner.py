"""The batch runner with a stand-in grader: resume, interrupts, faults, refusals, and the command's wiring.

``grade`` and the sandbox are replaced, so these tests exercise the runner alone:
a submission's file says which score it gets (``score = 7``).
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.batch import grading, pools
from harness.batch.collect import CollectedSubmission, collect
from harness.batch.pools import LocalPool
from harness.batch.runner import BatchInterrupted, run_batch, settings_record
from harness.cli import main
from harness.grade import GradeOptions
from harness.report.model import CheckResult, Interview, Report



class FakeSandbox:
    def __init__(self) -> None:
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()


@pytest.fixture
def fake(monkeypatch):
    """Replaces the grader and the sandbox; records what was graded and every sandbox handed out."""
    calls, sandboxes = [], []

    def grade(path, options, sandbox):
        text = Path(path).read_text()
        calls.append(Path(path).name)
        if "raise" in text:
            raise RuntimeError("boom")
        if "block" in text:  # waits until its sandbox is closed under it, as a killed worker would
            assert sandbox.closed.wait(10)
            raise RuntimeError("the sandbox was closed")
        score = float(re.search(r"score = (\d+)", text).group(1))
        check = CheckResult("core.accumulation", "core", "accumulation", "t", "passed" if score else "failed",
                            "", score, 10.0)
        return Report(file=str(path), status="graded", score=score, max_score=10.0,
                      levels={"core": {"score": score, "max_score": 10.0}}, checks=(check,), grader_version="0.1.0",
                      interview=Interview(passed=score >= 8, bar=8.0, core_score=score),
                      source_sha256=grading.source_sha256(Path(path)))

    class FakeSource:
        def __init__(self, options):
            pass

        def new(self):
            sandboxes.append(FakeSandbox())
            return sandboxes[-1]

        def close(self):
            pass

    monkeypatch.setattr(grading, "grade", grade)
    monkeypatch.setattr(pools, "SandboxSource", FakeSource)
    monkeypatch.setattr("harness.sandbox.launch.bubblewrap_missing", lambda: None)
    return calls, sandboxes


@pytest.fixture
def subs(tmp_path) -> Path:
    folder = tmp_path / "subs"
    folder.mkdir()
    for name, score in [("ann", 9), ("bo", 3), ("cy", 10)]:
        (folder / f"{name}.py").write_text(f"score = {score}\n")
    return folder


def invoke(*args):
    return CliRunner().invoke(main, ["batch", *map(str, args)], catch_exceptions=False)


def test_resume_grades_only_what_changed(fake, subs, tmp_path):
    calls, _ = fake
    out = tmp_path / "out"
    assert invoke(subs, "-o", out, "--level", "core").exit_code == 0
    assert sorted(calls) == ["ann.py", "bo.py", "cy.py"]
    ann_before = (out / "results" / "ann.json").read_text()
    calls.clear()
    (subs / "bo.py").write_text("score = 5\n")
    (subs / "dee.py").write_text("score = 8\n")
    result = invoke(subs, "-o", out, "--level", "core", "--resume")
    assert result.exit_code == 0
    assert sorted(calls) == ["bo.py", "dee.py"]
    assert (out / "results" / "ann.json").read_text() == ann_before
    assert "graded 4 submissions (2 from an earlier run)" in result.stdout
    assert "[2/4] 2 kept from an earlier run" in result.stderr and "[4/4] " in result.stderr
    rows = {r["id"]: r["score"] for r in json.loads((out / "summary.json").read_text())["submissions"]}
    assert rows == {"ann": 9, "bo": 5, "cy": 10, "dee": 8}
    calls.clear()
    result = invoke(subs, "-o", out, "--level", "core", "--resume", "--seed", "3")
    assert result.exit_code == 0
    assert sorted(calls) == ["ann.py", "bo.py", "cy.py", "dee.py"]  # other settings: nothing reused
    assert ("note: grading settings changed since the earlier run (seed 0 -> 3): every submission is graded "
            "again\n") in result.stderr


def test_resume_writes_every_export_of_the_earlier_run_for_the_whole_cohort(fake, subs, tmp_path):
    out, junit = tmp_path / "out", tmp_path / "junit.xml"
    assert invoke(subs, "-o", out, "--level", "core", "--gradescope", "--junit", junit,
                  "--similarity", "0.9").exit_code == 0
    (subs / "dee.py").write_text("score = 8\n")
    result = invoke(subs, "-o", out, "--level", "core", "--resume")
    assert result.exit_code == 0
    assert (f"note: kept the earlier run's outputs (--gradescope, --junit {junit}): written again for the whole "
            "cohort\n") in result.stderr
    assert json.loads((out / "gradescope" / "dee" / "results.json").read_text())["score"] == 8.0
    assert 'name="dee"' in junit.read_text()
    assert json.loads((out / "outputs.json").read_text())["similarity_threshold"] == 0.9
    result = invoke(subs, "-o", out, "--level", "core", "--resume", "--similarity", "0.5")
    assert ("note: output settings changed since the earlier run (similarity threshold 0.9 -> 0.5): every "
            "summary and export is written again for the whole cohort\n") in result.stderr
    assert "grading settings changed" not in result.stderr


def test_a_result_without_its_markdown_is_graded_again(fake, subs, tmp_path):
    calls, _ = fake
    out = tmp_path / "out"
    invoke(subs, "-o", out, "--level", "core")
    (out / "results" / "cy.md").unlink()
    calls.clear()
    invoke(subs, "-o", out, "--level", "core", "--resume")
    assert calls == ["cy.py"]


def test_a_fault_of_the_grader_is_one_row(fake, subs, tmp_path):
    (subs / "bo.py").write_text("raise\n")
    out = tmp_path / "out"
    assert invoke(subs, "-o", out).exit_code == 0
    bo = json.loads((out / "results" / "bo.json").read_text())
    assert (bo["status"], bo["message"], bo["file"]) == ("error", "internal grader error: RuntimeError: boom",
                                                          str(subs / "bo.py"))
    assert bo["levels"]["core"] == {"score": 0, "max_score": 60.0} and bo["interview"]["passed"] is False
    assert json.loads((out / "results" / "ann.json").read_text())["status"] == "graded"


def test_a_sandbox_that_cannot_start_is_one_row(fake, subs, tmp_path, monkeypatch):
    def broken(self):
        raise OSError("no space left on device")

    monkeypatch.setattr(pools.SandboxSource, "new", broken)
    monkeypatch.setattr(pools.LocalPool, "ready", lambda self: None)
    assert invoke(subs, "-o", tmp_path / "out").exit_code == 0
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())["submissions"]
    assert {(r["status"], r["message"]) for r in rows} == {
        ("error", "internal grader error: OSError: no space left on device")}
    assert len(rows) == 3


def test_without_bubblewrap_the_batch_refuses(fake, subs, tmp_path, monkeypatch):
    monkeypatch.setattr("harness.sandbox.launch.bubblewrap_missing", lambda: "bubblewrap is not installed")
    result = invoke(subs, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr == ("error: batch grading runs each submission in the bubblewrap sandbox, and bubblewrap "
                             "is not installed; pass --allow-basic-isolation to grade without it\n")
    assert not (tmp_path / "out").exists()
    assert invoke(subs, "-o", tmp_path / "out", "--allow-basic-isolation").exit_code == 0


def test_an_output_folder_that_cannot_be_made_is_a_one_line_error(fake, subs, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = invoke(subs, "-o", blocker / "out")
    assert result.exit_code == 2
    assert result.stderr == f"error: {blocker / 'out' / 'results'}: cannot write: Not a directory\n"


def test_bad_settings_are_found_before_grading(fake, subs, tmp_path):
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("bonus: 1\n")
    result = invoke(subs, "-o", tmp_path / "out", "--rubric", rubric)
    assert result.exit_code == 2
    assert result.stderr == f"error: {rubric}: unknown key 'bonus' (allowed: levels, weights, interview_bar, gates, agreements)\n"
    assert fake[0] == []


class _StoppingPool:
    """Yields one result, then the user presses Ctrl-C."""

    def __init__(self, inner):
        self.inner = inner
        self.ready, self.close = inner.ready, inner.close

    def results(self, submissions):
        for graded in self.inner.results(submissions[:1]):
            yield graded
        raise KeyboardInterrupt


def test_ctrl_c_keeps_finished_results(fake, subs, tmp_path):
    options = GradeOptions(level="core")
    submissions = collect(subs, "solution.py", tmp_path / "scratch")
    out = tmp_path / "out"
    with pytest.raises(BatchInterrupted) as stop:
        run_batch(submissions, _StoppingPool(LocalPool(options, 1)), out, settings_record(options, "solution.py"))
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["complete"], summary["pending"]) == (False, ["bo", "cy"])
    assert [r["id"] for r in summary["submissions"]] == ["ann"] and stop.value.run.interrupted
    assert sorted(p.name for p in (out / "results").iterdir()) == ["ann.json", "ann.md"]
    assert "Interrupted: 2 submissions were not graded" in (out / "report.html").read_text()


def test_ctrl_c_through_the_command(fake, subs, tmp_path, monkeypatch):
    monkeypatch.setattr("harness.cli.batch._pool",
                        lambda options, jobs, scheduler, allow: _StoppingPool(LocalPool(options, jobs)))
    result = invoke(subs, "-o", tmp_path / "out")
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1] == (f"interrupted: 1 of 3 graded, results kept in {tmp_path / 'out'}; "
                                              "run again with --resume to finish")


def test_closing_the_pool_closes_running_sandboxes(fake, subs, tmp_path):
    calls, sandboxes = fake
    (subs / "ann.py").write_text("block\n")
    stream = LocalPool(GradeOptions(), jobs=2).results(
        [CollectedSubmission(p.stem, p, str(p)) for p in sorted(subs.iterdir())])
    first = next(stream)  # bo or cy finishes; ann blocks on its sandbox
    assert first.id in ("bo", "cy")
    started = time.monotonic()
    stream.close()
    assert time.monotonic() - started < 5
    assert all(s.closed.is_set() for s in sandboxes)
    assert "ann.py" in calls


def test_a_zip_batch_resumes(fake, subs, tmp_path):
    import zipfile

    calls, _ = fake
    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(subs.iterdir()):
            zf.write(path, path.name)
    out = tmp_path / "out"
    assert invoke(archive, "-o", out, "--level", "core").exit_code == 0
    calls.clear()
    result = invoke(archive, "-o", out, "--level", "core", "--resume")
    assert result.exit_code == 0 and calls == []
    rows = {r["id"]: (r["status"], r["score"]) for r in json.loads((out / "summary.json").read_text())["submissions"]}
    assert rows == {"ann": ("graded", 9), "bo": ("graded", 3), "cy": ("graded", 10)}
