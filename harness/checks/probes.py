"""Is it an engine at all? Two run-time probes, judged in the grader's process.

Finite differences need no autograd, but they are not an engine either: the
gradient of every input element comes from evaluating the forward pass again.
Two signatures give them away, and each becomes a review entry (never a
violation: what the worker reports can incriminate, never clear):

* **cost**: the same graph at two input sizes. An engine's backward makes the
  same torch calls whatever the size, and its work grows with the size; one
  that re-evaluates the forward per element makes more calls as the input
  grows, or does work that grows with the square of the size.
* **accuracy**: on a smooth float64 graph of positive values, rules applied
  exactly agree with torch to about 1e-15; finite differences only to about
  1e-6..1e-10 relative, well inside the checks' tolerance.

A probe that fails, times out or returns nonsense says nothing.
"""

from __future__ import annotations

from typing import Any, Final

import torch

from harness.integrity.scan import ReviewEntry
from harness.ops import ops_for_level
from harness.program import Leaf, Program, Step

__all__ = ["review_at_run_time", "judge_backward_cost", "judge_accuracy", "SMOOTH_GRAPH", "COST_SIZES"]

COST_SIZES: Final = (4, 64)
"""Rows of the backward-cost graph ``((x @ w) * b + x).sum()``: 16x the input elements, the same graph."""
CALL_RATIO: Final = 4.0
"""More than this many times the torch calls for the larger input is not an engine's backward."""
WORK_RATIO: Final = 4.0
"""Work (result elements) growing more than this many times faster than the input is quadratic."""
EXACT: Final = 1e-11
"""Relative error above which gradients are approximations rather than rules applied exactly."""
WRONG: Final = 1e-4
"""Above this the gradients are simply wrong, which the checks report: not a finite-difference signature."""


def _smooth_graph() -> Program:
    g = torch.Generator().manual_seed(8)

    def positive(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=g, dtype=torch.float64) + 0.5

    return Program(
        (Leaf("x", positive(3, 4)), Leaf("w", positive(4, 2)), Leaf("b", positive(3, 2))),
        (Step("h", "matmul", ("x", "w")), Step("k", "mul", ("h", "b")), Step("m", "mul", ("k", "h")),
         Step("y", "sum", ("m",))),
        "y",
    )


SMOOTH_GRAPH: Final = _smooth_graph()
"""``h = x @ w; k = h * b; m = k * h; y = m.sum()`` on values in [0.5, 1.5]: smooth, no cancellation."""


def review_at_run_time(ctx: Any, members: set[str], line: int | None) -> list[ReviewEntry]:
    """Run both probes on the submission in ``ctx`` and add their review entries to ``ctx.shared.review``.

    ``line`` is where the candidate's ``backward`` is defined: the entries point there.
    """
    from harness.checks.context import CandidateError, CandidateTimeout

    core = {"backward"} | {spec.member for spec in ops_for_level("core")}
    if not core <= members or ctx.shared.violations:
        return []  # nothing to run, or proof already: the probes could only add a review
    found: list[ReviewEntry] = []
    try:
        facts = ctx.probe("backward_cost", sizes=list(COST_SIZES), timeout=3.0)
        entry = judge_backward_cost(facts, line)
        found += [entry] if entry else []
        observation = ctx.run(SMOOTH_GRAPH, timeout=3.0)
        stored = {str(g.get("dtype")) for g in (observation.raw.get("grads") or {}).values() if isinstance(g, dict)}
        # Float32 storage rounds to about 1e-7 relative by itself: accuracy says nothing about such an engine.
        entry = judge_accuracy(observation.grads, SMOOTH_GRAPH.run_torch().grads, line) if stored <= {"float64"} \
            else None
        found += [entry] if entry else []
    except (CandidateError, CandidateTimeout):
        pass  # silence proves nothing
    ctx.shared.add_review(found)
    return found


def judge_backward_cost(facts: Any, line: int | None) -> ReviewEntry | None:
    """The finite-difference signature in the backward-cost probe's counts, or None."""
    if not isinstance(facts, dict) or "error" in facts:
        return None
    sizes, calls, elements = (facts.get(k) for k in ("sizes", "calls", "elements"))
    if not all(isinstance(v, list) and len(v) == 2 and all(isinstance(n, int) and n >= 0 for n in v)
               for v in (sizes, calls, elements)) or sizes[0] < 1 or sizes[1] <= sizes[0]:
        return None
    growth = sizes[1] / sizes[0]
    call_ratio = calls[1] / max(calls[0], 1)
    if call_ratio > CALL_RATIO:
        return ReviewEntry(line, "backward()", (
            f"backward made {calls[1]} torch calls for {sizes[1]} input rows against {calls[0]} for {sizes[0]} "
            f"({call_ratio:.1f}x the calls for {growth:g}x the input, same graph): it re-evaluates the forward "
            "pass for every input element (finite differences), which is not an engine"))
    work_ratio = elements[1] / max(elements[0], 1)
    if work_ratio > WORK_RATIO * growth:
        return ReviewEntry(line, "backward()", (
            f"backward computed {elements[1]} tensor elements for {sizes[1]} input rows against {elements[0]} for "
            f"{sizes[0]} ({work_ratio:.0f}x the work for {growth:g}x the input, same graph): the work grows with "
            "the square of the input, as when every input element is perturbed at once (finite differences)"))
    return None


def judge_accuracy(got: dict[str, Any], expected: dict[str, Any], line: int | None) -> ReviewEntry | None:
    """The finite-difference signature in gradients of the smooth graph, or None."""
    worst = 0.0
    for name, want in expected.items():
        have = got.get(name)
        if not isinstance(want, torch.Tensor) or not isinstance(have, torch.Tensor) or have.shape != want.shape:
            return None
        error = ((have.to(torch.float64) - want).abs() / want.abs().clamp_min(1e-300)).max().item()
        if not error == error:  # NaN
            return None
        worst = max(worst, error)
    if EXACT < worst < WRONG:
        return ReviewEntry(line, "backward()", (
            f"gradients match torch only to {worst:.1e} relative on a smooth float64 graph "
            f"({SMOOTH_GRAPH.expression()}); rules applied exactly agree to about 1e-15, finite differences to "
            "about 1e-6..1e-10"))
    return None
