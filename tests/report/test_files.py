"""Reports on disk: `grade FILE -o DIR` writes every format at once, each file whole or not at all."""

import os

import pytest
from click.testing import CliRunner

import harness.grade
from harness.cli import main
from harness.report.files import write_atomic
from harness.report.model import CheckResult, Report


def _report() -> Report:
    check = CheckResult("core.accumulation", "core", "accumulation", "reuse accumulates", "failed", "a.grad differs",
                        0.0, 10.0)
    return Report(file="s.py", status="graded", score=0.0, max_score=10.0,
                  levels={"core": {"score": 0.0, "max_score": 10.0}}, checks=(check,))


def test_grade_file_writes_json_markdown_and_text(monkeypatch, tmp_path):
    monkeypatch.setattr(harness.grade, "grade_submission", lambda submission, options, sandbox: _report())
    submission = tmp_path / "alice.py"
    submission.write_text("class Tensor: pass\n")
    out = tmp_path / "reports"
    runner = CliRunner()
    result = runner.invoke(main, [str(submission), "-o", str(out)], catch_exceptions=False)
    assert result.exit_code == 1
    assert sorted(p.name for p in out.iterdir()) == ["alice.json", "alice.md", "alice.txt"]
    assert (out / "alice.txt").read_text() == result.stdout
    for fmt, suffix in [("json", "json"), ("markdown", "md")]:
        printed = runner.invoke(main, [str(submission), "--format", fmt], catch_exceptions=False).stdout
        assert (out / f"alice.{suffix}").read_text() == printed


def test_an_unwritable_folder_is_a_one_line_error(monkeypatch, tmp_path):
    monkeypatch.setattr(harness.grade, "grade_submission", lambda submission, options, sandbox: _report())
    submission = tmp_path / "alice.py"
    submission.write_text("class Tensor: pass\n")
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(main, [str(submission), "-o", str(blocker / "sub")], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr == f"error: {blocker / 'sub'}: cannot write the reports: Not a directory\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    write_atomic(target, "old")

    def broken(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        write_atomic(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["r.json"]
