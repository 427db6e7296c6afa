"""``grade FILE --watch``: one grade per save, in the sandbox opened while the candidate edited, the core level's
report handed over first; the screen that keeps Fix first in view is tests/test_watch_screen.py."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import harness.watch
from harness.grade import GradeOptions, grade
from harness.report.model import Report
from harness.watch import Watch

BUGS = Path(__file__).resolve().parent / "corpus" / "bugs"


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
    levels = ("core",) if options.level == "core" else ("core", "followups", "extensions")
    return Report(file="s.py", status="graded", score=0.0, max_score=float(len(levels)),
                  levels={level: {"score": 0.0, "max_score": 1.0} for level in levels}, checks=())


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def fake(submission, options, sandbox, core_graded=None):
        seen.append((options.level, sandbox, core_graded))
        if core_graded is not None:
            core_graded(_graded(dataclasses.replace(options, level="core")))
        return _graded(options)

    monkeypatch.setattr(harness.watch, "grade_submission", fake)
    return seen


@pytest.fixture
def solution(tmp_path):
    path = tmp_path / "solution.py"
    path.write_text("class Tensor:\n    pass\n")
    return path


def test_a_save_is_one_grade_in_the_spare_sandbox_that_hands_over_the_core_level_first(calls, solution):
    launcher, shown = _Launcher(), []
    with Watch(launcher, GradeOptions()) as watch:
        watch.prepare()
        watch.prepare()  # one spare at a time
        assert len(launcher.opened) == 1
        report = watch.grade(solution, shown.append)
    spare = launcher.opened[0]
    assert [(level, box) for level, box, _ in calls] == [("all", spare)]
    assert spare.closed and len(launcher.opened) == 1
    assert [list(r.levels) for r in shown] == [["core"]]
    assert list(report.levels) == ["core", "followups", "extensions"]


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


def _same(report: Report) -> dict:
    """The JSON report without what differs from run to run (timings)."""
    data = report.to_dict()
    data.pop("timings")
    for check in data["checks"]:
        check.pop("seconds")
    return data


@pytest.mark.slow
def test_the_watch_reports_are_a_plain_grades_of_the_file_and_of_its_core_level(launcher):
    path = BUGS / "recursive_build_topo.py"
    options = GradeOptions(max_examples=10)
    shown = []
    with Watch(launcher, options) as watch:
        watched = watch.grade(path, shown.append)
    plain = grade(path, options, launcher)
    core = grade(path, dataclasses.replace(options, level="core"), launcher)
    assert len(shown) == 1
    assert json.dumps(_same(watched)) == json.dumps(_same(plain))
    assert json.dumps(_same(shown[0])) == json.dumps(_same(core))
    assert plain.root_causes[0].bug == "recursive_topo"


def test_a_submission_that_cannot_start_is_reported_once(launcher, tmp_path):
    path = tmp_path / "solution.py"
    path.write_text("raise RuntimeError('not yet')\n\nclass Tensor:\n    pass\n")
    shown = []
    with Watch(launcher, GradeOptions(max_examples=5)) as watch:
        report = watch.grade(path, shown.append)
    assert shown == []  # nothing ran, so there is no core level to show first
    assert report.status == "error" and list(report.levels) == ["core", "followups", "extensions"]
    assert "RuntimeError: not yet" in report.message


def test_watch_and_batch_sandboxes_get_a_plain_grades_limits(monkeypatch):
    import harness.batch.pools

    options = GradeOptions(memory_mb=300)
    asked = []

    class _Recording(_Launcher):
        def __init__(self, *args, **kwargs) -> None:
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
