"""Timing verdicts: the worker's CPU time as the kernel counts it, best of several runs, growth fitted.

A correct engine must never fail them, even on a loaded machine; a quadratic and
an exponential engine must fail them every time.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import given, strategies as st

from harness.checks.context import Context, Failed, Observation, Shared
from harness.checks.targeted import backward_is_linear, deep_graph
from harness.checks.timing import GROWTH_WIDTHS, SUPERLINEAR_EXPONENT, Growth, every_path, measure_growth, wide_graph
from harness.sandbox.launch import Sandbox

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
CORRECT = ROOT / "corpus" / "conventions" / "reference_like.py"
QUADRATIC = ROOT / "solutions" / "quadratic_visited.py"
EXPONENTIAL = ROOT / "corpus" / "conventions" / "every_path.py"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox.launch() as sb:
        yield sb


def _context(sandbox: Sandbox, path: Path) -> Context:
    return Context(sandbox, path, "Tensor", path.stem, Shared(deadline=float("inf")))


def _fresh(ctx: Context) -> Context:
    """A new worker, as every targeted check gets."""
    ctx.begin(time.perf_counter() + 120.0, fresh=True)
    return ctx


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _busy(count: int) -> Iterator[list[int]]:
    """``count`` processes spinning on a core each; killed (by pid) when the block ends."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()


# ---- the growth fit --------------------------------------------------------------------


def test_the_exponent_is_the_slope_of_log_time_against_log_size():
    assert Growth(((1000, 0.1), (2000, 0.2), (4000, 0.4))).exponent == pytest.approx(1.0)
    assert Growth(((1000, 0.1), (2000, 0.4), (4000, 1.6))).exponent == pytest.approx(2.0)


@given(st.integers(100, 10_000), st.sampled_from([2, 3, 4]),
       st.lists(st.floats(0.001, 100.0), min_size=3, max_size=3))
def test_a_size_midway_in_log_between_two_others_never_moves_the_fitted_exponent(smallest, ratio, seconds):
    # Why core.linear_time measures two sizes only: a third, midway in log(nodes), cannot change the slope.
    ends = Growth(((smallest, seconds[0]), (smallest * ratio * ratio, seconds[2])))
    three = Growth(((smallest, seconds[0]), (smallest * ratio, seconds[1]), (smallest * ratio * ratio, seconds[2])))
    assert three.exponent == pytest.approx(ends.exponent, abs=1e-9)
    assert three.excess == ends.excess


def test_growth_is_super_linear_only_when_steep_and_seconds_beyond_linear():
    assert Growth(((4000, 0.1), (8000, 0.4), (16000, 1.6))).superlinear
    # As steep, but a few clock ticks: noise, not evidence.
    assert not Growth(((4000, 0.01), (8000, 0.04), (16000, 0.16))).superlinear
    # Slow but linear.
    assert not Growth(((4000, 1.0), (8000, 2.1), (16000, 4.3))).superlinear
    assert Growth(((4000, 0.1), (8000, 0.2), (16000, 0.4))).exponent < SUPERLINEAR_EXPONENT


class _ScriptedRuns:
    """A context whose timed runs take the CPU seconds of a script, one row per round of sizes."""

    def __init__(self, rounds: list[list[float]]):
        self.times = [t for row in rounds for t in row]
        self.calls = 0

    def run(self, program, **options):
        self.calls += 1
        return Observation({}, {}, {}, {}, None, 0.0, cpu_seconds=self.times.pop(0))


def test_a_slow_first_run_of_the_smallest_graph_cannot_hide_quadratic_growth():
    # Measured on a list-visited engine: the fresh worker's first, smallest run was slow, so
    # the first round alone fits n^1.49 and would have passed.
    ctx = _ScriptedRuns([[0.40, 2.25], [0.17, 2.31], [0.18, 2.40]])
    growth = measure_growth(ctx, [wide_graph(w) for w in GROWTH_WIDTHS])
    assert Growth(((4096, 0.40), (16384, 2.25))).exponent < SUPERLINEAR_EXPONENT
    assert ctx.calls == 6 and growth.superlinear
    assert [t for _, t in growth.points] == [0.17, 2.25]


def test_clearly_linear_growth_is_measured_once():
    ctx = _ScriptedRuns([[0.08, 0.30]])
    assert not measure_growth(ctx, [wide_graph(w) for w in GROWTH_WIDTHS]).superlinear
    assert ctx.calls == 2


def test_a_timed_run_reads_the_workers_cpu_time_from_the_kernel(sandbox):
    ctx = _fresh(_context(sandbox, CORRECT))
    try:
        obs = ctx.run(wide_graph(GROWTH_WIDTHS[-1]), observe="output", guard=False, timed=True)
        assert obs.error is None
        assert 0 < obs.cpu_seconds < 30
        assert ctx.run(wide_graph(8), observe="output").cpu_seconds is None  # untimed runs carry no timing
    finally:
        ctx.retire()


# ---- no false failure under load; a failure every time when the work is not linear ------------


def test_timing_checks_never_fail_a_correct_engine_on_a_loaded_machine(sandbox):
    ctx = _context(sandbox, CORRECT)
    started = time.perf_counter()
    try:
        with _busy(2) as pids:
            for _ in range(20):
                backward_is_linear(_fresh(ctx))
                every_path(ctx)
            busy_cpu = [_cpu_seconds(pid) for pid in pids]
    finally:
        ctx.retire()
    # The load was real: both spinners ran throughout (a share of the machine each, whatever else runs).
    assert min(busy_cpu) > 0.1 * (time.perf_counter() - started)


def test_a_quadratic_engine_fails_linear_time_every_time_on_the_best_of_three_runs(sandbox, monkeypatch):
    ctx = _context(sandbox, QUADRATIC)
    sizes: list[int] = []
    run = ctx.run

    def counted(program, **options):
        sizes.append(len(program.steps))
        return run(program, **options)

    monkeypatch.setattr(ctx, "run", counted)
    try:
        for _ in range(2):
            with pytest.raises(Failed, match=r"the time grows like n\^(1\.[5-9]|2\.\d) \(linear is n\^1\)"):
                backward_is_linear(_fresh(ctx))
    finally:
        ctx.retire()
    # Growth that looks super-linear is measured again: each verdict rests on three runs of every size.
    programs = [len(wide_graph(w).steps) for w in GROWTH_WIDTHS]
    assert sizes == programs * 6


def test_an_engine_that_walks_every_path_fails_order_every_time(sandbox):
    ctx = _context(sandbox, EXPONENTIAL)
    try:
        for _ in range(3):
            with pytest.raises(Failed, match="walks every path through the graph"):
                every_path(_fresh(ctx), timeout=1.0)
    finally:
        ctx.retire()


# ---- the deep chain -------------------------------------------------------------------------


def test_the_deep_chain_is_built_with_the_collector_paused(sandbox):
    """Its hundreds of thousands of objects are no garbage yet: collections meanwhile would cost a third of
    the forward pass and find nothing (the engine raises if one could have run)."""
    ctx = _fresh(_context(sandbox, ROOT / "checks" / "data" / "notes_collector.py"))
    try:
        deep_graph(ctx)  # raises Failed or CandidateError when the probe's backward raised
    finally:
        ctx.retire()
