"""The integrity verdict on two corpora: cheats must never pass the interview bar, look-alikes must be clean.

``tests/corpus/cheats/expected.yaml`` and ``tests/corpus/lookalikes/expected.yaml``
say what each file must get. The static scan decides most cheats in
milliseconds; every file then runs once in a worker (one core graph and the
integrity probes) for what only run time sees; a few go through the whole
grade, to prove the verdicts reach the report, the exit code and the
interview bar.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
from pathlib import Path
from typing import Any, Final

import pytest
import torch
import yaml

from harness.checks.context import CandidateError, CandidateTimeout, Context, Shared
from harness.grade import GradeOptions, grade
from harness.integrity.scan import inspect_source, member_line
from harness.integrity.allowlist import WHY
from harness.checks.probes import draw_cost_graphs, judge_backward_cost, review_at_run_time
from harness.integrity.use import NOT_RUN, settle
from harness.program import Leaf, Program, Step
from harness.report.model import exit_code
from harness.report.render import render_json, render_text
from harness.sandbox.launch import Limits, Sandbox
from harness.variants import kept, kept_review

ROOT = Path(__file__).resolve().parents[2]
CHEATS = ROOT / "tests" / "corpus" / "cheats"
LOOKALIKES = ROOT / "tests" / "corpus" / "lookalikes"
QUICK = GradeOptions(level="core", max_examples=5, specs=(ROOT / "specs" / "core" / "sum.yaml",), replace_specs=True)
"""Enough of a grade to reach the report: the core checks, five random graphs, five spec cases."""

GRAPH = Program(
    (Leaf("x", torch.tensor([[1.0, -2.0, 3.0], [0.5, 2.0, -1.0]], dtype=torch.float64)),
     Leaf("w", torch.tensor([[1.0, 2.0], [0.0, -1.0], [3.0, 1.0]], dtype=torch.float64))),
    (Step("h", "matmul", ("x", "w")), Step("r", "relu", ("h",)), Step("k", "mul", ("r", "h")), Step("y", "sum", ("k",))),
    "y",
)
"""The one core graph each file runs: every core op, and a result used twice."""


def _manifest(folder: Path) -> list[dict[str, Any]]:
    entries = yaml.safe_load((folder / "expected.yaml").read_text()) or []
    assert entries, f"{folder}/expected.yaml lists no files"
    return entries


CHEAT_ENTRIES = _manifest(CHEATS)
ran: dict[Path, set[tuple[str, int]]] = {}
"""The submission's functions each file ran under ``run_time`` (recorded for files with static violations)."""
LOOKALIKE_ENTRIES = _manifest(LOOKALIKES)


def _id(entry: dict[str, Any]) -> str:
    return entry["file"].removesuffix(".py")


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox.launch(Limits(import_seconds=10.0)) as box:
        yield box


@pytest.fixture(scope="module")
def run_time(sandbox):
    """file -> (violations, review entries) seen while it runs the core graph and the integrity probes
    (under ``variant``: what the variant allows is left out)."""
    cache: dict[Path, tuple[list[str], list[Any]]] = {}
    ran.clear()

    def run(path: Path, variant: str = "tensor") -> tuple[list[str], list[Any]]:
        if path not in cache:
            shared = Shared(deadline=float("inf"), trace_calls=bool(inspect_source(path.read_text()).violations))
            ctx = Context(sandbox, path, "Tensor", path.stem, shared, variant=variant)
            try:
                hello = ctx.worker().hello
                ctx.run(GRAPH, timeout=10.0)
                # Drawn from the file's name: the same graphs on every run (the draws' spread has its own test).
                review_at_run_time(ctx, set(hello.get("members", [])), member_line(path.read_text(), "Tensor", "backward"),
                                   rng=random.Random(path.name))
            except (CandidateError, CandidateTimeout):
                pass  # what was seen up to here still counts
            finally:
                ctx.retire()
            cache[path] = (list(kept(shared.violations, variant)), list(kept_review(shared.review, variant)))
            ran[path] = set(shared.ran)
        return cache[path]

    return run


# ---- the manifests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("folder, entries, least", [(CHEATS, CHEAT_ENTRIES, 20), (LOOKALIKES, LOOKALIKE_ENTRIES, 10)],
                         ids=["cheats", "lookalikes"])
def test_every_file_has_an_expected_verdict(folder, entries, least):
    on_disk = {p.name for p in folder.glob("*.py")}
    listed = [e["file"] for e in entries]
    assert len(listed) == len(set(listed)), "a file is listed twice"
    assert on_disk == set(listed)
    assert len(listed) >= least


@pytest.mark.parametrize("entry", CHEAT_ENTRIES, ids=_id)
def test_cheat_manifest_entry_is_well_formed(entry):
    assert set(entry) <= {"file", "route", "verdict", "static", "runtime", "variant"}
    assert entry["verdict"] in ("violation", "review") and entry.get("variant", "tensor") in ("tensor", "function")
    assert {key for _, key in entry["static"]["review"]} <= set(WHY)


# ---- the static scan -------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", CHEAT_ENTRIES, ids=_id)
def test_the_scan_reports_exactly_the_expected_lines(entry):
    findings = inspect_source((CHEATS / entry["file"]).read_text())
    keys = {text: key for key, text in WHY.items()}
    assert list(findings.violations) == entry["static"]["violations"]
    assert [[e.line, keys[e.why]] for e in findings.review] == entry["static"]["review"]


@pytest.mark.parametrize("entry", LOOKALIKE_ENTRIES, ids=_id)
def test_a_lookalike_is_clean_to_the_scan(entry):
    findings = inspect_source((LOOKALIKES / entry["file"]).read_text())
    assert (findings.violations, findings.review) == ((), ())


# ---- run time ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", [e for e in CHEAT_ENTRIES if "runtime" in e], ids=_id)
def test_the_worker_reports_what_only_run_time_sees(entry, run_time):
    violations, review = run_time(CHEATS / entry["file"], entry.get("variant", "tensor"))
    expected = entry["runtime"]
    missing = [v for v in expected["violations"] if v not in violations]
    assert missing == [], f"not reported: {missing}; reported: {violations}"
    for line, construct, why in expected["review"]:
        assert any(e.line == line and e.construct == construct and e.why.startswith(why) for e in review), (
            f"no review entry [{line}, {construct}, {why}...] in {review}")
    if entry["verdict"] == "review":
        assert violations == [], "a review verdict with proof at run time should say violation"


# Draws whose graphs kept batched finite differences under the quadratic bar when the large input had
# 10..14 times the rows of the small one (found by probing 1,500 draws), and a hundred more.
_HARD_DRAWS: Final = [31, 85, 123, 169, 177, 246, 254, 298, 315, 377, 385, 426, 468, 469, 594, 600, 645, 713]


def test_batched_finite_differences_are_caught_whatever_the_probe_graphs(sandbox):
    path = CHEATS / "batched_differences.py"
    ctx = Context(sandbox, path, "Tensor", path.stem, Shared(deadline=float("inf")))
    try:
        missed = []
        for seed in _HARD_DRAWS + list(range(100)):
            pairs = draw_cost_graphs(random.Random(seed))
            facts = ctx.probe("backward_cost", programs=[p.to_wire() for pair in pairs for p in pair], timeout=30.0)
            if judge_backward_cost(facts, 1) is None:
                missed.append((seed, facts))
    finally:
        ctx.retire()
    assert missed == []


@pytest.mark.parametrize("entry", CHEAT_ENTRIES, ids=_id)
def test_no_cheat_passes_the_interview_bar(entry, run_time):
    path = CHEATS / entry["file"]
    variant = entry.get("variant", "tensor")
    static = inspect_source(path.read_text())
    if "runtime" in entry:
        seen, review = run_time(path, variant)
        static = settle(static, path.read_text(), ran[path])  # a violation needs a path the run executed
    else:
        seen, review = [], []
    violations = list(kept(static.violations, variant)) + seen
    lines = [e.line for e in static.review] + [e.line for e in review]
    if entry["verdict"] == "violation":
        assert violations, "no proof found"
    else:
        assert violations == [] and any(isinstance(line, int) for line in lines), "no review entry names a line"


@pytest.mark.parametrize("entry", LOOKALIKE_ENTRIES, ids=_id)
def test_a_lookalike_is_clean_at_run_time(entry, run_time):
    assert run_time(LOOKALIKES / entry["file"]) == ([], [])


# ---- through the whole grade -------------------------------------------------------------------------


def test_a_review_verdict_keeps_the_score_but_not_the_interview_bar(sandbox):
    path = CHEATS / "finite_differences.py"
    report = grade(path, QUICK, sandbox=sandbox)
    assert report.status == "graded" and report.score > 0  # the grade is computed as usual
    assert report.interview.passed is False and report.interview.needs_review is True
    data = json.loads(render_json(report))
    lines = [entry["line"] for entry in data["integrity"]["review"]]
    accuracy, cost = (entry["why"] for entry in data["integrity"]["review"])
    assert lines == [56, 56]  # def backward(self)
    # The probe graphs are drawn per grade: the figures vary, their relation does not. Finite differences
    # make a fixed number of torch calls per input element, so the calls grow with the rows.
    found = re.fullmatch(r"backward made (\d+) torch calls for (\d+) input rows against (\d+) for (\d+) \(([\d.]+)x "
                         r"the calls for ([\d.]+)x the input, same graph\): it re-evaluates the forward pass for every "
                         r"input element \(finite differences\), which is not an engine", cost)
    assert found, cost
    big_calls, big_rows, small_calls, small_rows = (int(found.group(i)) for i in range(1, 5))
    assert big_rows >= 10 * small_rows and big_calls / small_calls > 4
    assert float(found.group(5)) == round(big_calls / small_calls, 1)
    prefix, tail = "gradients match torch only to ", ("; rules applied exactly agree to about 1e-15, finite "
                                                      "differences to about 1e-6..1e-10")
    assert accuracy.startswith(prefix) and accuracy.endswith(tail)
    figure, graph = accuracy[len(prefix):-len(tail)].split(" relative on a smooth float64 graph ")
    assert 1e-11 < float(figure) < 1e-6 and graph.startswith("(h = x @ w; ") and graph.endswith(".sum())")
    text = render_text(report).splitlines()
    header = text.index("integrity review: a person must read these lines before the interview bar can pass")
    assert text[header + 1] == "  - line 56: backward()"
    first_level = next(i for i, line in enumerate(text) if line.startswith("core"))
    assert header < first_level, "the review list comes before any check"


def test_proof_seen_only_at_run_time_scores_zero(sandbox):
    report = grade(CHEATS / "thread_unwrapped_engine.py", QUICK, sandbox=sandbox)
    assert (report.status, exit_code(report), report.score) == ("integrity_violation", 4, 0.0)
    assert "at run time: called torch.autograd.grad (line 61)" in report.integrity_violations
    assert report.interview.passed is False


def test_a_lookalike_passes_the_interview_bar(sandbox):
    report = grade(LOOKALIKES / "metaprogramming_ops.py", QUICK, sandbox=sandbox)
    assert (report.status, exit_code(report), report.integrity_violations, report.integrity_review) == (
        "graded", 0, (), ())
    assert report.interview.passed is True and report.interview.needs_review is False


def test_a_resolved_autograd_call_in_code_that_never_ran_is_a_review_entry(sandbox):
    report = grade(CHEATS / "unused_torch_check.py", QUICK, sandbox=sandbox)
    assert (report.status, exit_code(report), report.integrity_violations) == ("graded", 0, ())
    assert report.score > 0 and report.interview.passed is False
    # compare_with_torch (lines 66-72) is never called: its two resolved calls are lines for a person to read.
    assert [(e.line, e.why) for e in report.integrity_review if e.why == NOT_RUN] == [(69, NOT_RUN),
                                                                                             (70, NOT_RUN)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["type_checking_alias.py", "main_match_capture.py", "function_torch_nodes.py",
                                  "allowed_names_node_call.py", "dataclass_factory_open.py"])
def test_a_guard_switched_off_and_back_or_a_laundered_event_never_passes_the_bar(name, sandbox):
    entry = next(e for e in CHEAT_ENTRIES if e["file"] == name)
    options = dataclasses.replace(QUICK, variant=entry.get("variant", "tensor"))
    report = grade(CHEATS / name, options, sandbox=sandbox)
    assert report.interview.passed is False
    if entry["verdict"] == "violation":
        assert (report.status, exit_code(report), report.score) == ("integrity_violation", 4, 0.0)
    else:
        assert report.status == "graded" and report.interview.needs_review is True
        assert [e.line for e in report.integrity_review if e.line is not None]


_SWITCHED: Final = "at run time: the submission disabled the grader's guard: "


@pytest.mark.slow
@pytest.mark.parametrize("name, expected", [
    # __exit__ of the grader's own mode (line 21), put back with __enter__ in the same call
    ("mode_exit_method.py", f"{_SWITCHED}it took its torch-function mode off the stack (line 21)"),
    # type.__setattr__ of the engine (line 23), swapped back in a finally
    ("engine_type_setattr.py", f"{_SWITCHED}it replaced the watched autograd engine (line 23)"),
    # tracing switched on (line 22) and off again in a finally
    ("saved_hooks_tracing.py", f"{_SWITCHED}it hid saved-tensor hooks (tracing mode) (line 22)"),
])
def test_a_switch_put_back_is_a_violation_at_the_line_that_made_it(name, expected, sandbox):
    report = grade(CHEATS / name, QUICK, sandbox=sandbox)
    assert report.status == "integrity_violation" and expected in report.integrity_violations
    assert not [v for v in report.integrity_violations if not v.startswith("at run time: ")]  # no static proof


def test_an_engine_that_warns_logs_and_prints_passes_the_bar(sandbox):
    report = grade(LOOKALIKES / "warnings_numpy_torch.py", QUICK, sandbox=sandbox)
    assert (report.status, exit_code(report), report.integrity_violations, report.integrity_review) == (
        "graded", 0, (), ())
    assert report.interview.passed is True
    assert "RuntimeWarning" in report.output["stderr"] and "backward over" in report.output["stderr"]
