"""Is it an engine at all? Run-time probes, drawn per grade, judged in the grader's process.

Finite differences need no autograd, but they are not an engine either: the
gradient of every input element comes from evaluating the forward pass again.
Three signatures give them away, and each becomes a review entry (never a
violation: what the worker reports can incriminate, never clear):

* **cost**: the same graph at two input sizes. An engine's backward makes the
  same torch calls and the same Python calls whatever the size, and its work
  grows with the size; one that re-evaluates the forward per element makes
  more calls as the input grows (in torch, or in numpy through Python loops),
  or does work that grows with the square of the size.
* **complex numbers**: a backward that computes complex tensors is stepping
  the forward pass into the complex plane (complex-step differentiation).
* **accuracy**: on smooth float64 graphs of positive values, rules applied
  exactly agree with torch to about 1e-15; finite differences only to about
  1e-6..1e-10 relative, well inside the checks' tolerance.

The probes' graphs (structure, shapes and values) are drawn for every grade
from the grader's own randomness, never from the report's seed: a submission
cannot recognise them and answer them alone exactly. Several are run per grade.
A probe that fails, times out or returns nonsense says nothing.
"""

from __future__ import annotations

import random
from typing import Any, Final

import torch

from harness.integrity.scan import ReviewEntry
from harness.ops import ops_for_level
from harness.program import Leaf, Program, Step

__all__ = ["review_at_run_time", "judge_backward_cost", "judge_accuracy", "draw_cost_graphs", "draw_smooth_graphs",
           "PROBES_PER_GRADE"]

PROBES_PER_GRADE: Final = 2
"""Cost graphs (each at two sizes) and accuracy graphs run per grade."""
CALL_RATIO: Final = 4.0
"""More than this many times the torch calls (or Python calls) for the larger input is not an engine's backward."""
WORK_RATIO: Final = 4.0
"""Work (result elements) growing more than this many times faster than the input is quadratic."""
EXACT: Final = 1e-11
"""Relative error above which gradients are approximations rather than rules applied exactly."""
WRONG: Final = 1e-4
"""Above this the gradients are simply wrong, which the checks report: not a finite-difference signature."""

_AFTER_MATMUL: Final = ("mul_b", "add_b", "relu", "square", "mul_h")
"""What may follow ``h = x @ w`` in a probe graph; every value stays positive, so every op is smooth there."""


def _graph(rng_seed: int, ops: list[str], rows: int, inner: int, cols: int) -> Program:
    g = torch.Generator().manual_seed(rng_seed)

    def positive(*shape: int) -> torch.Tensor:
        return torch.rand(*shape, generator=g, dtype=torch.float64) + 0.5

    leaves = (Leaf("x", positive(rows, inner)), Leaf("w", positive(inner, cols)), Leaf("b", positive(rows, cols)))
    steps = [Step("h", "matmul", ("x", "w"))]
    current = "h"
    for i, what in enumerate(ops):
        name = f"v{i}"
        args = {"mul_b": ("mul", (current, "b")), "add_b": ("add", (current, "b")), "relu": ("relu", (current,)),
                "square": ("mul", (current, current)), "mul_h": ("mul", (current, "h"))}[what]
        steps.append(Step(name, args[0], args[1]))
        current = name
    steps.append(Step("y", "sum", (current,)))
    return Program(leaves, tuple(steps), "y")


def _structure(rng: random.Random) -> list[str]:
    return [rng.choice(_AFTER_MATMUL) for _ in range(rng.randint(1, 3))]


def draw_cost_graphs(rng: random.Random, count: int = PROBES_PER_GRADE) -> list[tuple[Program, Program]]:
    """``count`` pairs of one drawn graph at a small and a large number of input rows (20..28 times more).

    The growth has to beat the leaf whose size does not grow: perturbing ``w`` costs finite differences
    only linear work, and at 10..14 times the rows a large ``w`` kept two in a hundred draws under the
    quadratic bar.
    """
    pairs = []
    for _ in range(count):
        ops, inner, cols, seed = _structure(rng), rng.randint(2, 4), rng.randint(2, 4), rng.getrandbits(31)
        small = rng.randint(2, 3)
        pairs.append((_graph(seed, ops, small, inner, cols), _graph(seed, ops, small * rng.randint(20, 28), inner,
                                                                    cols)))
    return pairs


def draw_smooth_graphs(rng: random.Random, count: int = PROBES_PER_GRADE) -> list[Program]:
    """``count`` drawn graphs of matmul, mul, add and sum on values in [0.5, 1.5]: smooth, no cancellation."""
    return [_graph(rng.getrandbits(31), _structure(rng), rng.randint(2, 5), rng.randint(2, 5), rng.randint(2, 4))
            for _ in range(count)]


def review_at_run_time(ctx: Any, members: set[str], line: int | None,
                       rng: random.Random | None = None) -> list[ReviewEntry]:
    """Run the probes on the submission in ``ctx`` and add their review entries to ``ctx.shared.review``.

    ``line`` is where the candidate's ``backward`` is defined: the entries point there.
    ``rng`` draws the graphs: the operating system's randomness unless a test fixes it.
    """
    from harness.checks.context import CandidateError, CandidateTimeout

    core = {"backward"} | {spec.member for spec in ops_for_level("core")}
    if not core <= members or ctx.shared.violations:
        return []  # nothing to run, or proof already: the probes could only add a review
    rng = rng or random.SystemRandom()
    found: list[ReviewEntry] = []
    smooth, pairs = draw_smooth_graphs(rng), draw_cost_graphs(rng)
    try:  # accuracy first: cheap for every engine, where the cost probe is slow for the ones it catches
        for graph, observation in zip(smooth, ctx.run_many(smooth, timeout=3.0)):
            stored = {str(g.get("dtype")) for g in (observation.raw.get("grads") or {}).values()
                      if isinstance(g, dict)}
            # Float32 storage rounds to about 1e-7 relative by itself: accuracy says nothing about such an engine.
            entry = judge_accuracy(observation.grads, graph.run_torch().grads, line, graph) \
                if stored <= {"float64"} else None
            if entry:
                found.append(entry)
                break
    except CandidateError:
        pass  # silence proves nothing
    except CandidateTimeout:
        ctx.shared.add_review(found)
        return found  # a backward that does not return would spend the grade's timeout budget on probes
    try:
        # Slow for what it catches (a replay per input element), never for an engine: a longer wait.
        facts = ctx.probe("backward_cost", programs=[p.to_wire() for pair in pairs for p in pair], timeout=6.0)
        entry = judge_backward_cost(facts, line)
        found += [entry] if entry else []
    except (CandidateError, CandidateTimeout):
        pass
    ctx.shared.add_review(found)
    return found


def judge_backward_cost(facts: Any, line: int | None) -> ReviewEntry | None:
    """The finite-difference (or complex-step) signature in the cost probe's counts, or None.

    ``facts`` holds one entry per run, in pairs: the same graph at a small, then a large number of rows.
    """
    if not isinstance(facts, dict) or "error" in facts:
        return None
    if facts.get("complex") is True:
        return ReviewEntry(line, "backward()", (
            "backward computed complex numbers for a graph of real tensors: it evaluates the forward pass on "
            "complex inputs (complex-step differentiation), which is not an engine"))
    sizes, calls, elements = (facts.get(k) for k in ("sizes", "calls", "elements"))
    py_calls = facts.get("py_calls") or [0] * len(sizes or [])
    if not all(isinstance(v, list) and len(v) == len(sizes or ()) and len(v) % 2 == 0 and
               all(isinstance(n, int) and n >= 0 for n in v) for v in (sizes, calls, elements, py_calls)):
        return None
    for i in range(0, len(sizes), 2):
        entry = _judge_pair(sizes[i:i + 2], calls[i:i + 2], elements[i:i + 2], py_calls[i:i + 2], line)
        if entry is not None:
            return entry
    return None


def _judge_pair(sizes: list[int], calls: list[int], elements: list[int], py_calls: list[int],
                line: int | None) -> ReviewEntry | None:
    if sizes[0] < 1 or sizes[1] <= sizes[0]:
        return None
    growth = sizes[1] / sizes[0]
    for counted, what in ((calls, "torch calls"), (py_calls, "Python calls")):
        ratio = counted[1] / max(counted[0], 1)
        if ratio > CALL_RATIO:
            return ReviewEntry(line, "backward()", (
                f"backward made {counted[1]} {what} for {sizes[1]} input rows against {counted[0]} for {sizes[0]} "
                f"({ratio:.1f}x the calls for {growth:g}x the input, same graph): it re-evaluates the forward "
                "pass for every input element (finite differences), which is not an engine"))
    work_ratio = elements[1] / max(elements[0], 1)
    if work_ratio > WORK_RATIO * growth:
        return ReviewEntry(line, "backward()", (
            f"backward computed {elements[1]} tensor elements for {sizes[1]} input rows against {elements[0]} for "
            f"{sizes[0]} ({work_ratio:.0f}x the work for {growth:g}x the input, same graph): the work grows with "
            "the square of the input, as when every input element is perturbed at once (finite differences)"))
    return None


def judge_accuracy(got: dict[str, Any], expected: dict[str, Any], line: int | None,
                   graph: Program | None = None) -> ReviewEntry | None:
    """The finite-difference signature in gradients of a smooth graph (``graph``, to name it), or None."""
    worst, compared = 0.0, 0
    for name, want in expected.items():
        if want is None:
            continue  # a leaf the drawn graph does not use
        have = got.get(name)
        if not isinstance(want, torch.Tensor) or not isinstance(have, torch.Tensor) or have.shape != want.shape:
            return None
        compared += 1
        error = ((have.to(torch.float64) - want).abs() / want.abs().clamp_min(1e-300)).max().item()
        if not error == error:  # NaN
            return None
        worst = max(worst, error)
    if compared and EXACT < worst < WRONG:
        named = f" ({graph.expression()})" if graph is not None else ""
        return ReviewEntry(line, "backward()", (
            f"gradients match torch only to {worst:.1e} relative on a smooth float64 graph{named}; rules applied "
            "exactly agree to about 1e-15, finite differences to about 1e-6..1e-10"))
    return None
