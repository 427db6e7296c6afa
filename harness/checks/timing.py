"""What backward's cost shows: the graphs whose size tells a walk of every path or a quadratic walk
from a reverse topological one, and CPU time measured against graph size.

``core.order`` runs ``every_path`` after its order graphs; ``core.linear_time`` fits ``measure_growth``
over ``wide_graph``s. The checks themselves are declared in ``targeted.py``, in the order they run.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Callable, Final, Sequence

import torch

from harness.checks.builders import program as _program, tensor as _t
from harness.checks.context import (CandidateError, CandidateTimeout, Context, Evidence, Failed, Observation,
                                    describe_error)
from harness.compare import DEFAULT_TOLERANCE, compare
from harness.graph_shapes import WIDE, wide_steps
from harness.program import Program

__all__ = ["stacked_diamonds", "every_path", "wide_graph", "Growth", "measure_growth", "verify_wide",
           "EVERY_PATH_LEVELS", "EVERY_PATH_TIMEOUT", "GROWTH_WIDTHS", "SUPERLINEAR_EXPONENT"]


def stacked_diamonds(levels: int) -> Program:
    """h -> (h + z, h + z) -> their sum, stacked: the gradient doubles per level, the paths double too."""
    steps: list[tuple] = []
    h = "x"
    for i in range(levels):
        steps += [(f"p{i}", "add", [h, "z"]), (f"q{i}", "add", [h, "z"]), (f"h{i}", "add", [f"p{i}", f"q{i}"])]
        h = f"h{i}"
    steps.append(("y", "sum", [h]))
    # z requires grad too: a leaf that needs none is the requires_grad concept's, not order's.
    return _program({"x": (_t([1.0, -1.0]), True), "z": (_t([0.0, 0.0]), True)}, steps)


EVERY_PATH_LEVELS: Final = 40
EVERY_PATH_TIMEOUT: Final = 3.0
"""Seconds for 40 stacked diamonds (122 nodes): milliseconds for a reverse topological walk, never for 2^40 paths."""


def every_path(ctx: Context, levels: int = EVERY_PATH_LEVELS, timeout: float = EVERY_PATH_TIMEOUT) -> None:
    """Fail unless backward over ``levels`` stacked diamonds finishes: an engine that walks every path never does."""
    deep = stacked_diamonds(levels)
    nodes = len(deep.steps)
    why = (f"it walks every path through the graph (2^{levels} of them) instead of visiting each node once in "
           "reverse topological order")
    try:
        obs = ctx.run(deep, timeout=timeout, observe="output", timed=True)
    except CandidateTimeout:
        raise Failed(f"backward did not finish within {timeout:g} s on {levels} stacked diamonds ({nodes} nodes): "
                     f"{why}", reason="every_path", graph=f"{levels} stacked diamonds: p = h + z; q = h + z; h = p + q"
                     ).with_evidence(Evidence(deep, None, None)) from None
    if obs.error is not None:
        raise CandidateError(describe_error(obs.error)).with_evidence(Evidence(deep, obs, None))
    if obs.cpu_seconds is not None and obs.cpu_seconds > 1.0:
        raise Failed(f"backward on {levels} stacked diamonds ({nodes} nodes) used {obs.cpu_seconds:.2f} s of CPU, "
                     f"where a reverse topological walk takes milliseconds: {why}",
                     reason="every_path", cpu_seconds=obs.cpu_seconds).with_evidence(Evidence(deep, obs, None))


@functools.lru_cache(maxsize=8)  # programs are immutable, and building 16k steps costs more than running them
def wide_graph(width: int) -> Program:
    """``width`` sums ``x + x``, added up pairwise: about ``2 * width`` nodes, depth ~log2(width).

    The worker is sent the description (``graph_shapes``), not the megabyte of steps it stands for."""
    steps = [(s["name"], s["op"], s["args"]) for s in wide_steps(width)]
    return dataclasses.replace(_program({"x": (_t([1.0, 2.0]), True)}, steps), described=(("shape", WIDE),
                                                                                          ("width", width)))


GROWTH_WIDTHS: Final = (2048, 8192)
"""Wide graphs of about 4k and 16k nodes: large enough that a quadratic walk dominates the run.

Two sizes, because a size between them would change nothing: with sizes evenly spaced in
log(nodes), the least-squares slope depends on the two ends only (``Growth.exponent``), and
the excess is measured between the ends too. The middle run could only warm the worker up
for the largest: without it, seven engines of the solutions corpus fitted exponents within
0.1 of those with it (run-to-run noise), a quadratic one 1.77 either way."""
GROWTH_RUNS: Final = 3
SUPERLINEAR_EXPONENT: Final = 1.5
"""Fitted exponent above which growth is super-linear: a linear engine measures 0.7-1.3 here, a quadratic one 1.6-1.9."""
MIN_EXCESS_SECONDS: Final = 0.3
"""CPU seconds the largest graph must take beyond a linear extrapolation from the smallest, so that clock
ticks (10 ms) and small engines' noise never decide a verdict."""
CLEARLY_LINEAR_EXPONENT: Final = 1.4
"""Below this and half the excess, one run settles it. A single run can understate growth as
well as overstate it (a fresh worker's first, smallest run is often slow), so anything between
is measured again."""
_TICK: Final = 0.005


@dataclass(frozen=True)
class Growth:
    """CPU time against graph size: the best of several runs per size, and the fitted exponent."""

    points: tuple[tuple[int, float], ...]
    """(nodes, best CPU seconds) per size, smallest first."""

    @property
    def exponent(self) -> float:
        """Least-squares slope of log(time) against log(nodes): 1 is linear, 2 quadratic."""
        xs = [math.log(n) for n, _ in self.points]
        ys = [math.log(max(t, _TICK)) for _, t in self.points]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)

    @property
    def excess(self) -> float:
        """Seconds the largest size took beyond the smallest size's time scaled linearly."""
        (n0, t0), (n1, t1) = self.points[0], self.points[-1]
        return t1 - t0 * n1 / n0

    @property
    def superlinear(self) -> bool:
        return self.exponent > SUPERLINEAR_EXPONENT and self.excess > MIN_EXCESS_SECONDS

    @property
    def clearly_linear(self) -> bool:
        """Well below both bars, so that a better run could not lift it over them."""
        return self.exponent <= CLEARLY_LINEAR_EXPONENT and self.excess <= MIN_EXCESS_SECONDS / 2


def measure_growth(ctx: Context, programs: Sequence[Program], *, runs: int = GROWTH_RUNS,
                   verify: Callable[[Program, Observation], None] | None = None) -> Growth:
    """Time each program (ascending sizes) by the worker's CPU time, as measured by the kernel.

    One run per size is enough when growth is clearly linear. Anything else is measured
    again, up to ``runs`` times per size, and judged on the best time of each size: load and
    a fresh worker's warm-up only add time, to a small graph as much as to a large one, so
    one slow run can hide a quadratic walk as easily as fake one.
    """
    best = [math.inf] * len(programs)
    growth = Growth(())
    for _ in range(runs):
        for i, program in enumerate(programs):
            obs = ctx.run(program, timeout=40.0, observe="output", guard=False, timed=True)
            if verify is not None:
                verify(program, obs)
            if obs.cpu_seconds is not None and not math.isnan(obs.cpu_seconds):
                best[i] = min(best[i], obs.cpu_seconds)
        if any(math.isinf(t) for t in best):
            return Growth(())  # the kernel's count was unavailable: no verdict either way
        growth = Growth(tuple((len(p.steps), t) for p, t in zip(programs, best)))
        if growth.clearly_linear:
            break
    return growth


def verify_wide(program: Program, obs: Observation) -> None:
    if obs.error is not None:
        raise CandidateError(describe_error(obs.error)).with_evidence(Evidence(program, obs, None))
    # Every x + x adds 2 to x's gradient (torch on 16k nodes would cost more than the run).
    want = 2.0 * sum(step.args == ("x", "x") for step in program.steps)
    grad = obs.grads.get("x")
    if not isinstance(grad, torch.Tensor) or compare(grad, torch.full_like(program.leaf("x").value, want),
                                                     DEFAULT_TOLERANCE, "x.grad"):
        raise Failed(f"on a wide graph of {len(program.steps)} nodes x.grad is "
                     f"{grad.tolist() if isinstance(grad, torch.Tensor) else grad}, expected {want:g} everywhere"
                     ).with_evidence(Evidence(program, obs, None))
