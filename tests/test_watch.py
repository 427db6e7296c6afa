"""``grade FILE --watch``: the core level first (in the sandbox opened while the candidate edited), then the rest."""

from __future__ import annotations

import pytest

import harness.watch
from harness.grade import GradeOptions
from harness.report.model import Report
from harness.watch import REST, Watch


class _Box:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


class _Launcher:
    """Hands out fake sandboxes and counts them."""

    def __init__(self) -> None:
        self.opened: list[_Box] = []

    def sandbox(self, limits) -> _Box:
        self.opened.append(_Box())
        return self.opened[-1]


def _graded(options: GradeOptions) -> Report:
    levels = ("core",) if options.level == "core" else options.levels or ("core", "followups", "extensions")
    return Report(file="s.py", status="graded", score=0.0, max_score=float(len(levels)),
                  levels={level: {"score": 0.0, "max_score": 1.0} for level in levels}, checks=())


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def fake(submission, options, sandbox):
        seen.append((options.level, options.levels, sandbox))
        return _graded(options)

    monkeypatch.setattr(harness.watch, "grade_scanned", fake)
    monkeypatch.setattr(harness.watch, "rediagnose", lambda report, options: report)
    return seen


@pytest.fixture
def solution(tmp_path):
    path = tmp_path / "solution.py"
    path.write_text("class Tensor:\n    pass\n")
    return path


def test_the_core_level_comes_first_in_the_spare_sandbox_then_the_rest_in_a_fresh_one(calls, solution):
    launcher, shown = _Launcher(), []
    with Watch(launcher, GradeOptions()) as watch:
        watch.prepare()
        watch.prepare()  # one spare at a time
        assert len(launcher.opened) == 1
        report = watch.grade(solution, shown.append)
    spare = launcher.opened[0]
    assert calls == [("core", (), spare), ("all", REST, launcher)]
    assert spare.closed
    assert [list(r.levels) for r in shown] == [["core"]]
    assert list(report.levels) == ["core", "followups", "extensions"]


def test_a_save_is_scanned_once_for_both_halves(calls, solution, monkeypatch):
    scans = []
    real = harness.watch.scanned
    monkeypatch.setattr(harness.watch, "scanned", lambda submission, variant: scans.append(variant) or real(
        submission, variant))
    with Watch(_Launcher(), GradeOptions()) as watch:
        watch.grade(solution)
    assert len(calls) == 2 and scans == ["tensor"]


def test_one_level_is_one_grade_and_nothing_is_shown_early(calls, solution):
    launcher, shown = _Launcher(), []
    with Watch(launcher, GradeOptions(level="followups")) as watch:
        watch.grade(solution, shown.append)
    assert calls == [("followups", (), launcher.opened[0])] and shown == []


def test_a_file_the_source_decides_opens_no_sandbox_and_a_spare_is_closed_with_the_watch(calls, tmp_path):
    path = tmp_path / "solution.py"
    path.write_text("def f(:\n")
    launcher, shown = _Launcher(), []
    with Watch(launcher, GradeOptions()) as watch:
        report = watch.grade(path, shown.append)
        watch.prepare()
    assert report.status == "error" and report.message.startswith("SyntaxError at line 1")
    assert calls == [] and shown == []
    assert [box.closed for box in launcher.opened] == [True]


def test_a_submission_that_cannot_start_is_reported_for_the_core_level_and_for_the_whole(launcher, tmp_path):
    path = tmp_path / "solution.py"
    path.write_text("raise RuntimeError('not yet')\n\nclass Tensor:\n    pass\n")
    shown = []
    with Watch(launcher, GradeOptions(max_examples=5)) as watch:
        report = watch.grade(path, shown.append)
    assert [(r.status, list(r.levels)) for r in shown] == [("error", ["core"])]
    assert "RuntimeError: not yet" in shown[0].message
    assert report.status == "error" and list(report.levels) == ["core", "followups", "extensions"]


def test_watch_and_batch_sandboxes_get_a_plain_grades_limits(monkeypatch):
    import harness.batch.pools

    options = GradeOptions(memory_mb=300)
    asked = []

    class _Recording(_Launcher):
        def __init__(self, *args) -> None:
            super().__init__()

        def sandbox(self, limits):
            asked.append(limits)
            return super().sandbox(limits)

    with Watch(_Recording(), options) as watch:
        watch.prepare()
    monkeypatch.setattr(harness.batch.pools, "Launcher", _Recording)
    harness.batch.pools.SandboxSource(options).new()
    # The whole submission's processes together get twice one process's memory, in every way of grading.
    assert [(limits.memory_mb, limits.tree_memory_mb) for limits in asked] == [(300, 600), (300, 600)]
