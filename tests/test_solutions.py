"""The grader against a zoo of submissions: correct, buggy, cheating and hostile.

Each file in ``tests/solutions/`` is one submission; ``expected.yaml`` says how
it must grade (status, exit code, which checks fail and which pass, score
bounds). The expectations come from each file's bug, so a failure here means
the grader missed a bug, blamed the wrong check, or let a hostile submission
move its verdict. Every submission is graded once per option set and shared by
the tests of this module.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import os
from unittest import mock
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import yaml

from harness.checks.context import Shared
from harness.grade import GradeOptions, grade, planned_checks
from harness.ops import OPS
from harness.report.model import OUTCOMES, STATUSES, Report, exit_code
from harness.sandbox.launch import Launcher

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "tests" / "solutions"
MANIFEST = SOLUTIONS / "expected.yaml"
REFERENCE = ROOT / "reference" / "engine.py"
TEMPLATE = ROOT / "candidate_template" / "solution.py"

FAST = {"max_examples": 50}
"""Fewer hypothesis examples than a real grade: every bug below is found well within them."""
FAILING = ("failed", "error", "timeout")
ENTRY_KEYS = {"file", "options", "timeout_budget", "status", "exit_code", "fails", "passes", "not_attempted",
              "min_score_fraction", "max_score_fraction"}
TIMING_KEYS = {"timings", "seconds", "backward_seconds"}

# hostile_grandchild.py starts ``sleep <this>``: a value no other process uses, to find leftovers by.
SLEEPER_SECONDS = f"1000.{os.getpid()}"
os.environ["GRADER_TEST_SLEEP_SECONDS"] = SLEEPER_SECONDS


def _load_manifest() -> list[dict[str, Any]]:
    entries = yaml.safe_load(MANIFEST.read_text()) or []
    assert entries, f"{MANIFEST} lists no submissions"
    return entries


ENTRIES = _load_manifest()


def _entry_id(entry: dict[str, Any]) -> str:
    options = entry.get("options") or {}
    return entry["file"].removesuffix(".py") + "".join(f"[{k}={v}]" for k, v in sorted(options.items()))


def _options(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry's GradeOptions fields, hashable: spec paths are relative to the project."""
    options = dict(entry.get("options") or {})
    if "specs" in options:  # the manifest's specs are all a grade loads: they replace the library
        options["specs"] = tuple(ROOT / p for p in options["specs"])
        options["replace_specs"] = True
    return options


@pytest.fixture(scope="module")
def graded(launcher, reads_back) -> Callable[..., Report]:
    """grade(file, **options), each distinct call made once for the whole module (and read back from
    its JSON)."""
    cache: dict[tuple[Path, tuple[tuple[str, Any], ...]], Report] = {}

    def run(path: Path, timeout_budget: float | None = None, **options: Any) -> Report:
        key = (path, tuple(sorted({**FAST, **options}.items())))
        if key not in cache:
            # A smaller budget of timed-out seconds ends the same path sooner: the grader's
            # 30 s is sized for real submissions, not for a test that only proves the path.
            budget = Shared.TIMEOUT_BUDGET if timeout_budget is None else timeout_budget
            with mock.patch.object(Shared, "TIMEOUT_BUDGET", budget):
                cache[key] = reads_back(grade(path, GradeOptions(**dict(key[1])), launcher))
        return cache[key]

    return run


# ---- the manifest itself -----------------------------------------------------------------------


def test_every_submission_has_expectations_and_every_expectation_a_submission():
    on_disk = {p.name for p in SOLUTIONS.glob("*.py")}
    listed = {entry["file"] for entry in ENTRIES}
    assert on_disk, f"no submissions in {SOLUTIONS}"
    assert on_disk - listed == set(), "submissions without expectations"
    assert listed - on_disk == set(), "expectations for missing files"


@pytest.mark.parametrize("entry", ENTRIES, ids=_entry_id)
def test_manifest_entry_is_well_formed(entry):
    assert set(entry) <= ENTRY_KEYS, f"unknown keys {sorted(set(entry) - ENTRY_KEYS)}"
    assert entry["status"] in STATUSES
    assert entry["exit_code"] in (0, 1, 3, 4)
    # Every name must mean a check the grader plans: a typo would otherwise pass silently.
    planned = [c.id for c in planned_checks(GradeOptions(**{**FAST, **_options(entry)}))]
    for key in ("fails", "passes", "not_attempted"):
        for name in entry.get(key, []):
            assert fnmatch.filter(planned, name), f"{key}: {name!r} matches no planned check"


# ---- every submission grades as expected -----------------------------------------------------


def _problems(entry: dict[str, Any], report: Report) -> list[str]:
    """Everything about ``report`` that contradicts ``entry``, one line each."""
    outcomes = {c.id: c for c in report.checks}
    found = []
    if report.status != entry["status"]:
        found.append(f"status is {report.status!r}, expected {entry['status']!r} ({report.message})")
    if exit_code(report) != entry["exit_code"]:
        found.append(f"exit code is {exit_code(report)}, expected {entry['exit_code']}")
    wanted = {"fails": FAILING, "passes": ("passed",), "not_attempted": ("not_attempted",)}
    for key, allowed in wanted.items():
        for name in entry.get(key, []):
            matched = fnmatch.filter(outcomes, name)
            if not matched:
                found.append(f"{key}: no check in the report matches {name!r}")
            for check_id in matched:
                check = outcomes[check_id]
                if check.outcome not in allowed:
                    found.append(f"{check_id} is {check.outcome} ({check.message[:160]!r}), expected {key}")
    fraction = report.score / report.max_score if report.max_score else 0.0
    if "min_score_fraction" in entry and fraction < entry["min_score_fraction"] - 1e-9:
        found.append(f"score {report.score:.2f}/{report.max_score:.2f} is below {entry['min_score_fraction']:.0%}")
    if "max_score_fraction" in entry and fraction > entry["max_score_fraction"] + 1e-9:
        found.append(f"score {report.score:.2f}/{report.max_score:.2f} is above {entry['max_score_fraction']:.0%}")
    return found


@pytest.mark.parametrize("entry", ENTRIES, ids=_entry_id)
def test_submission_grades_as_expected(entry, graded):
    report = graded(SOLUTIONS / entry["file"], entry.get("timeout_budget"), **_options(entry))
    problems = _problems(entry, report)
    assert not problems, "\n".join([f"{entry['file']}:"] + problems)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e["status"] != "integrity_violation"], ids=_entry_id)
def test_only_cheats_are_integrity_violations(entry, graded):
    report = graded(SOLUTIONS / entry["file"], entry.get("timeout_budget"), **_options(entry))
    assert list(report.integrity_violations) == []


def test_checks_have_known_outcomes_and_points_within_bounds(graded):
    report = graded(SOLUTIONS / "overwrite_grad.py")
    for check in report.checks:
        assert check.outcome in OUTCOMES
        assert 0 <= check.points <= check.max_points + 1e-9
        assert check.points == 0 or check.outcome == "passed"
    assert report.score == pytest.approx(sum(c.points for c in report.checks))


# ---- hostile submissions leave nothing behind --------------------------------------------------


def _sleepers() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv[:2] == [b"sleep", SLEEPER_SECONDS.encode()]:
                found.append(int(entry))
    return found


def test_the_request_still_running_when_the_timeout_budget_is_spent_is_stopped(graded):
    entry = next(e for e in ENTRIES if e["file"] == "hostile_infinite_loop.py")
    report = graded(SOLUTIONS / entry["file"], entry.get("timeout_budget"), **_options(entry))
    deep = next(c for c in report.checks if c.id == "followups.deep_graph")  # a 30 s probe, far from its end
    assert deep.outcome == "timeout" and "stopped unfinished" in deep.message, deep.message


def test_a_grandchild_does_not_outlive_the_grade(graded):
    report = graded(SOLUTIONS / "hostile_grandchild.py", time_limit=12)
    assert report.status == "timeout"
    leftovers = _sleepers()
    for pid in leftovers:  # ours (the duration is unique to this run): clean up before failing
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
    assert leftovers == [], "the submission's grandchild survived the grade"


def test_forged_output_is_kept_as_output_not_taken_as_a_report(graded):
    report = graded(SOLUTIONS / "hostile_forged_stdout.py")
    assert report.status == "graded"
    assert report.score < report.max_score
    assert all(c.concept != "forged" for c in report.checks)


def test_an_engine_whose_every_leaf_gradient_is_zero_is_told_so_first(graded):
    # hostile_forged_stdout.py's backward writes zeros into every leaf (its own docstring says so): no single
    # op's rule explains that, the engine as a whole does.
    report = graded(SOLUTIONS / "hostile_forged_stdout.py")
    first = report.root_causes[0]
    assert first.symptom == "all_zero", first
    assert first.name.startswith("Every leaf's gradient is zero"), first


# ---- the reference and the template --------------------------------------------------------------


def test_the_reference_scores_full_marks_on_every_level(graded):
    report = graded(REFERENCE)
    failing = [(c.id, c.outcome, c.message[:160]) for c in report.checks if c.outcome != "passed"]
    assert failing == []
    assert report.status == "graded"
    assert exit_code(report) == 0
    assert set(report.levels) == {"core", "followups", "extensions"}
    for level, points in report.levels.items():
        assert points["score"] == pytest.approx(points["max_score"]), level
    assert report.score == pytest.approx(report.max_score)


def _template_module():
    spec = importlib.util.spec_from_file_location("candidate_solution_template", TEMPLATE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_template_constructs_and_every_core_member_says_not_implemented():
    Tensor = _template_module().Tensor
    data = torch.tensor(1.0)
    t = Tensor(data, requires_grad=True)
    assert t.data is data and t.requires_grad is True and t.grad is None
    assert Tensor(data).requires_grad is False
    calls = {
        "__add__": lambda: t + t, "__mul__": lambda: t * t, "__matmul__": lambda: t @ t,
        "relu": lambda: t.relu(), "sum": lambda: t.sum(), "backward": lambda: t.backward(),
    }
    assert set(calls) == {spec.member for spec in OPS.values() if spec.level == "core"} | {"backward"}
    for member, call in calls.items():
        with pytest.raises(NotImplementedError, match=f"^not implemented: {member}$"):
            call()


def test_the_template_leaves_every_optional_member_undefined():
    module = _template_module()
    optional = {spec.member for spec in OPS.values() if spec.level != "core"}
    optional |= {"__radd__", "__rmul__", "__rsub__", "__rtruediv__"}
    defined = {name for name in optional if name in vars(module.Tensor)}
    assert defined == set()
    assert not hasattr(module, "no_grad")


def test_the_untouched_template_scores_zero_and_says_what_it_waits_for(graded):
    report = graded(TEMPLATE)
    assert report.status == "graded"
    # Nothing is attempted, so nothing failed: a stub is not attempted, never an error.
    assert exit_code(report) == 0
    assert report.score == 0
    by_id = {c.id: c for c in report.checks}
    core = [c for c in report.checks if c.level == "core"]
    assert core
    for check in core:
        assert check.outcome == "not_attempted" and check.kind == "stub", (check.id, check.outcome)
        assert check.message.startswith("not attempted: waits for `"), (check.id, check.message)
    for check_id in ("followups.no_grad", "followups.cross_entropy", "extensions.numbers"):
        assert by_id[check_id].outcome == "not_attempted", check_id
    for check in report.checks:
        if check.level == "extensions":
            assert check.outcome == "not_attempted", (check.id, check.outcome)


# ---- same file, same grade ---------------------------------------------------------------------


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items()
                if k not in TIMING_KEYS and not k.startswith("duration")}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def test_grading_the_same_file_twice_gives_the_same_report(graded):
    # A file whose failures include a shrunk hypothesis counterexample, and none that depends on a clock.
    path = SOLUTIONS / "overwrite_grad.py"
    first = graded(path).to_dict()
    with Launcher() as own:  # a template of its own: nothing carried over from the first grade's
        second = grade(path, GradeOptions(**FAST), own).to_dict()
    assert _without_timings(second) == _without_timings(first)


# ---- a report that fits on a screen ----------------------------------------------------------------


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.get("fails") and e["status"] == "graded"], ids=_entry_id)
def test_a_failing_files_text_report_fits_on_a_screen(entry, graded):
    from harness.report.render import render_text

    text = render_text(graded(SOLUTIONS / entry["file"], **_options(entry)))
    # A few bugs fit one 80x40 screen (tests/test_cli.py); integrity findings, what the submission printed
    # and a long first snippet add their lines, never a page of checks.
    assert len(text.splitlines()) <= 50, f"{entry['file']}: {len(text.splitlines())} lines"
    assert len(text.encode()) < 20_000, f"{entry['file']}: {len(text.encode())} bytes"
