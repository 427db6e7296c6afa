"""The targeted checks: each rule of the contract as its own check with its own message.

Checks are declared with ``@check`` in the order they run; the docstring's
first line is the title a candidate reads. A check passes by returning, fails
by raising ``Failed`` (a wrong answer) and errs by raising ``CandidateError``
or ``CandidateTimeout`` (the candidate's code raised, died or hung).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Final, Sequence

import torch

from harness.checks.context import (CandidateError, CandidateTimeout, Context, Evidence, Failed, Observation,
                                    describe_error, judge)
from harness.compare import DEFAULT_TOLERANCE, compare, tolerance_for
from harness.concepts import concepts
from harness.ops import ops_for_level
from harness.checks.snippets import reproduce
from harness.program import Leaf, Program, Step
from harness.vocabulary import LEVELS

__all__ = ["CheckSpec", "CHECKS", "check", "Growth", "measure_growth", "wide_graph", "stacked_diamonds",
           "every_path", "ORDER_GRAPHS"]


@dataclass(frozen=True)
class CheckSpec:
    id: str
    level: str
    concept: str
    run: Callable[[Context], None]
    requires: frozenset[str]
    """Members (``relu``) and features (``feature:no_grad``) the candidate needs to attempt it."""
    timeout: float
    """Seconds for the whole check."""
    cost: float = 1.0
    """Rough seconds on a correct engine: the grader starts the costliest checks first."""
    isolated: bool = True
    """Runs in a fresh worker. Checks that only run graph programs may share one, as spec cases do:
    starting a worker would cost more than they do."""

    @property
    def title(self) -> str:
        return (self.run.__doc__ or self.id).strip().splitlines()[0]

    @property
    def hint(self) -> str | None:
        lines = [line.strip() for line in (self.run.__doc__ or "").strip().splitlines()[1:] if line.strip()]
        return " ".join(lines) or None


CHECKS: Final[list[CheckSpec]] = []

CORE_MEMBERS: Final = frozenset({"backward"} | {spec.member for spec in ops_for_level("core")})


def check(id: str, level: str, concept: str, *, requires: frozenset[str] | set[str] = frozenset(),
          timeout: float = 30.0, cost: float = 0.1,
          isolated: bool = True) -> Callable[[Callable[[Context], None]], Callable[[Context], None]]:
    """Register a check. Its level is one of the vocabulary's, its concept one that `grade explain` knows."""
    if level not in LEVELS:
        raise ValueError(f"check {id}: unknown level {level!r}; one of {', '.join(LEVELS)}")
    if concept not in concepts():
        raise ValueError(f"check {id}: unknown concept {concept!r}: add it to harness/data/concepts.yaml")

    def register(fn: Callable[[Context], None]) -> Callable[[Context], None]:
        CHECKS.append(CheckSpec(id, level, concept, fn, frozenset(requires), timeout, cost, isolated))
        return fn

    return register


# ---- small program builders -------------------------------------------------------


def _t(values, dtype=torch.float64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def _program(leaves: dict[str, tuple[torch.Tensor, bool]], steps: list[tuple[str, str, list]],
             upstream: torch.Tensor | None = None, passes: int = 1) -> Program:
    """A program from ``{name: (value, requires_grad)}`` and ``(name, op, args)`` steps; the last step is the output."""
    built = tuple(Step(name, op, tuple(args)) for name, op, args in steps)
    return Program(tuple(Leaf(n, v, rg) for n, (v, rg) in leaves.items()), built, built[-1].name, upstream, passes)


_A = _t([[1.0, -2.0, 3.0], [0.5, 2.0, -1.0]])
_B = _t([[2.0, 1.0, -1.0], [-3.0, 0.5, 2.0]])
_SQUARE = _t([[1.0, 2.0, 0.0], [-1.0, 3.0, 1.0], [2.0, -2.0, 1.0]])  # not symmetric: a flipped transpose shows
_SYMMETRIC = _t([[1.0, 2.0, -1.0], [2.0, 3.0, 0.5], [-1.0, 0.5, 2.0]])  # a flipped transpose cannot show


# ---- core --------------------------------------------------------------------------


@check("core.requires_grad", "core", "requires_grad", requires=CORE_MEMBERS)
def requires_grad_propagates(ctx: Context) -> None:
    """A result requires grad exactly when one of its inputs does.

    Decide requires_grad when the result is created, from its inputs.
    """
    p = _program({"a": (_A, True), "b": (_B, False), "c": (_B * 2, False), "w": (_SQUARE, False)}, [
        ("p", "mul", ["b", "c"]), ("q", "add", ["a", "b"]), ("r", "matmul", ["p", "w"]),
        ("s", "add", ["r", "q"]), ("t", "relu", ["s"]), ("y", "sum", ["t"]),
    ])
    ctx.expect(p, parts=("error", "requires_grad"))


@check("core.grad_none", "core", "requires_grad", requires=CORE_MEMBERS)
def grad_stays_none(ctx: Context) -> None:
    """A tensor that does not require grad keeps grad None after backward.

    Only tensors created with requires_grad=True (and results built from them) take part in backward.
    """
    p = _program({"a": (_A, True), "b": (_B, False), "w": (_SQUARE, False)}, [
        ("p", "mul", ["a", "b"]), ("r", "matmul", ["p", "w"]), ("y", "sum", ["r"]),
    ])
    # None-ness only: the values of a's gradient are the other checks' business.
    ctx.expect(p, parts=("error", "none"))


@check("core.grad_types", "core", "shapes", requires=CORE_MEMBERS)
def grads_have_shapes(ctx: Context) -> None:
    """Every gradient is a plain torch tensor with its own tensor's shape, and floating point for float data.

    A gradient must have exactly the shape of the tensor it belongs to (sum's backward must expand), and must not
    lose values to an integer dtype.
    """
    parts = ("error", "grad_types", "dtypes")
    p = _program({"x": (_A, True), "w": (_t([[1.0, 0.0, -1.0, 2.0]] * 3) + _SQUARE[:, :1], True),
                  "b": (_t([[0.5, -0.5, 1.0, 2.0], [1.0, 1.0, -2.0, 0.0]]), True)}, [
        ("h", "matmul", ["x", "w"]), ("bb", "mul", ["b", "b"]), ("z", "add", ["h", "bb"]),
        ("r", "relu", ["z"]), ("y", "sum", ["r"]),
    ])
    ctx.expect(p, parts=parts)
    q = _program({"x": (_A, True)}, [("y", "sum", ["x"])])
    ctx.expect(q, parts=parts)
    single = _program({"x": (_A.float(), True), "w": (_SQUARE.float(), True)},
                      [("h", "matmul", ["x", "w"]), ("k", "add", ["h", "x"]), ("y", "sum", ["k"])])
    ctx.expect(single, parts=parts)


@check("core.conventions", "core", "conventions", requires=CORE_MEMBERS)
def torch_conventions(ctx: Context) -> None:
    """Results follow torch's conventions: sum is 0-d, float64 stays float64, any one-element output backpropagates.

    Torch's sum() returns a 0-d tensor (shape ()), keeps the dtype it is given, and backward() accepts every
    one-element output (seed it with ones of the output's own shape). The other checks forgive these; this one
    does not.
    """
    found: list[str] = []
    evidence: list[Evidence] = []
    summed = _program({"x": (_A, True)}, [("y", "sum", ["x"])])
    obs = _run_plain(ctx, summed)
    got = obs.values.get("y")
    if isinstance(got, torch.Tensor) and got.dim() != 0:
        found.append(f"x.sum() has shape {tuple(got.shape)}, torch gives a 0-d tensor (shape ())")
        evidence.append(Evidence(summed, obs, summed.run_torch()))
    stored = {obs.dtype("leaf_data", "x"), obs.dtype("values", "y")} - {None, "float64"}
    if stored:
        found.append(f"Tensor(float64 data) holds {', '.join(sorted(stored))}: keep the dtype you are given "
                     "(torch does), or every result loses precision")
        evidence.append(Evidence(summed, obs, summed.run_torch()))
    grad_dtype, data_dtype = obs.dtype("grads", "x"), obs.dtype("leaf_data", "x")
    floats = grad_dtype and data_dtype and all(d.startswith(("float", "bfloat")) for d in (grad_dtype, data_dtype))
    if floats and grad_dtype != data_dtype:  # an integer gradient loses values: core.grad_types fails it
        found.append(f"x.grad has dtype {grad_dtype} where x holds {data_dtype}: torch gives a gradient its "
                     "tensor's dtype (build it with zeros_like/ones_like of the data)")
        evidence.append(Evidence(summed, obs, summed.run_torch()))
    # A (1, 3) @ (3, 1) product is one element but not 0-d: torch's backward() accepts it as the root,
    # and @'s backward needs the root gradient in the output's own shape.
    row, column = _t([[1.0, -2.0, 0.5]]), _t([[2.0], [1.0], [-1.0]])
    rooted = _program({"r": (row, True), "c": (column, True)}, [("y", "matmul", ["r", "c"])])
    expected = rooted.run_torch()
    obs = _run_plain(ctx, rooted, allow_error=True)
    if obs.error is not None:
        found.append(f"backward() on a one-element output of shape (1, 1) raised {describe_error(obs.error)}; "
                     "torch accepts any one-element output")
        evidence.append(Evidence(rooted, obs, expected))
    else:
        verdict = judge(rooted, obs, expected, ("grads",))
        if verdict is not None:
            found.append(f"with a one-element output of shape (1, 1): {verdict.message} (seed backward with ones "
                         "of the output's own shape)")
            evidence.append(Evidence(rooted, obs, expected))
    if found:
        raise Failed("; ".join(found), graph=evidence[0].program.expression(),
                     snippet=reproduce(evidence[0].program, ctx.path, ctx.class_name)).with_evidence(evidence[0])


def _run_plain(ctx: Context, program: Program, allow_error: bool = False) -> Observation:
    obs = ctx.run(program)
    if obs.error is not None and not allow_error:
        raise CandidateError(describe_error(obs.error), graph=program.expression()).with_evidence(
            Evidence(program, obs, program.run_torch()))
    return obs


@check("core.accumulation", "core", "accumulation", requires=CORE_MEMBERS)
def reuse_accumulates(ctx: Context) -> None:
    """A tensor used several times gets the sum of all its gradient contributions.

    When a tensor feeds several operations (or both sides of one), add up every contribution with +=.
    """
    # Every product here multiplies a tensor by itself (a symmetric matrix for @), so a
    # rule that swaps operands or transposes the wrong side is other checks' concern.
    cases = [
        _program({"a": (_A, True)}, [("s", "mul", ["a", "a"]), ("y", "sum", ["s"])]),
        _program({"a": (_A, True)}, [("s", "add", ["a", "a"]), ("y", "sum", ["s"])]),
        _program({"x": (_SYMMETRIC, True)}, [("s", "matmul", ["x", "x"]), ("y", "sum", ["s"])]),
        _program({"a": (_A, True), "b": (_B, True)}, [
            ("p", "mul", ["a", "a"]), ("q", "add", ["a", "b"]), ("r", "relu", ["a"]),
            ("s", "add", ["p", "q"]), ("t", "add", ["s", "r"]), ("y", "sum", ["t"]),
        ]),
    ]
    for p in cases:
        ctx.expect(p, hint="the tensor used more than once must receive the sum of all contributions")


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


def _mirrored(steps: list[tuple[str, str, list]]) -> list[tuple[str, str, list]]:
    """The same graph with the operands of every + and * swapped: ``a + b`` becomes ``b + a``."""
    return [(name, op, args[::-1] if op in ("add", "mul") else args) for name, op, args in steps]


def _order_graphs() -> list[Program]:
    """Graphs on which each wrong order gives a wrong gradient, whichever operand an engine visits first.

    Breadth-first order, discovery order, depth-first pre-order and passing a gradient on
    at its first arrival each break on ``every_depth`` in both operand orders; stacked
    diamonds break all but breadth-first; uneven paths break each in one operand order.
    """
    x, w = _t([[1.0, -2.0], [0.5, 1.5]]), _t([[2.0, 0.5], [-1.0, 1.0]])
    # Only +: a wrong rule for * or @ is other checks' concern, not this one's.
    every_depth = [  # h0 is consumed at depths 1, 2, 3 and 4 from the output
        ("h0", "add", ["w", "x"]), ("h1", "add", ["h0", "w"]), ("h2", "add", ["h1", "h0"]),
        ("h3", "add", ["h2", "h0"]), ("h4", "add", ["h0", "h3"]), ("y", "sum", ["h4"]),
    ]
    uneven = [  # x reaches the output along paths of length 1, 2 and 3
        ("a", "add", ["x", "x"]), ("b", "add", ["a", "x"]), ("c", "add", ["a", "b"]), ("d", "add", ["c", "x"]),
        ("y", "sum", ["d"]),
    ]
    graphs = [stacked_diamonds(10)]
    for steps, leaves in ((every_depth, {"x": (x, True), "w": (w, True)}), (uneven, {"x": (x, True)})):
        graphs += [_program(leaves, steps), _program(leaves, _mirrored(steps))]
    return graphs


ORDER_GRAPHS: Final = _order_graphs()

EVERY_PATH_LEVELS: Final = 40
EVERY_PATH_TIMEOUT: Final = 3.0
"""Seconds for 40 stacked diamonds (122 nodes): milliseconds for a reverse topological walk, never for 2^40 paths."""


@check("core.order", "core", "order", requires=CORE_MEMBERS, timeout=20.0)
def reverse_topological_order(ctx: Context) -> None:
    """Backward visits nodes in reverse topological order: each once, after all its consumers.

    Sort the graph topologically once, then walk it backwards, so a node passes its gradient on only when it
    is complete.
    """
    for program in ORDER_GRAPHS:
        ctx.expect(program, hint="a node's gradient was passed on before all its consumers had contributed")
    every_path(ctx)


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
                     f"{why}", graph=f"{levels} stacked diamonds: p = h + z; q = h + z; h = p + q"
                     ).with_evidence(Evidence(deep, None, None)) from None
    if obs.error is not None:
        raise CandidateError(describe_error(obs.error)).with_evidence(Evidence(deep, obs, None))
    if obs.cpu_seconds is not None and obs.cpu_seconds > 1.0:
        raise Failed(f"backward on {levels} stacked diamonds ({nodes} nodes) used {obs.cpu_seconds:.2f} s of CPU, "
                     f"where a reverse topological walk takes milliseconds: {why}",
                     cpu_seconds=obs.cpu_seconds).with_evidence(Evidence(deep, obs, None))


@functools.lru_cache(maxsize=8)  # programs are immutable, and building 16k steps costs more than running them
def wide_graph(width: int) -> Program:
    """``width`` sums ``x + x``, added up pairwise: about ``2 * width`` nodes, depth ~log2(width)."""
    steps: list[tuple] = [(f"t{i}", "add", ["x", "x"]) for i in range(width)]
    layer = [f"t{i}" for i in range(width)]
    depth = 0
    while len(layer) > 1:
        depth += 1
        nxt = []
        for i in range(0, len(layer) - 1, 2):
            name = f"s{depth}_{i // 2}"
            steps.append((name, "add", [layer[i], layer[i + 1]]))
            nxt.append(name)
        if len(layer) % 2:
            nxt.append(layer[-1])
        layer = nxt
    steps.append(("y", "sum", [layer[0]]))
    return _program({"x": (_t([1.0, 2.0]), True)}, steps)


GROWTH_WIDTHS: Final = (2048, 4096, 8192)
"""Wide graphs of about 4k, 8k and 16k nodes: large enough that a quadratic walk dominates the run."""
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


def _verify_wide(program: Program, obs: Observation) -> None:
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


@check("core.linear_time", "core", "linearity", requires=CORE_MEMBERS, timeout=90.0, cost=1.0)
def backward_is_linear(ctx: Context) -> None:
    """Backward takes time linear in the size of the graph.

    Keep visited nodes in a set (keyed by id), not a list: membership tests must be O(1).
    """
    growth = measure_growth(ctx, [wide_graph(w) for w in GROWTH_WIDTHS], verify=_verify_wide)
    if growth.points and growth.superlinear:
        (n0, t0), (n1, t1) = growth.points[0], growth.points[-1]
        raise Failed(f"forward and backward over {n1} nodes used {t1:.2f} s of CPU against {t0:.3f} s for {n0}: "
                     f"the time grows like n^{growth.exponent:.1f} (linear is n^1), so backward is not linear in "
                     "the graph's size", cpu_seconds=[list(point) for point in growth.points]
                     ).with_evidence(Evidence(wide_graph(GROWTH_WIDTHS[-1]), None, None))


@check("core.inputs_unchanged", "core", "side_effects", requires=CORE_MEMBERS)
def inputs_unchanged(ctx: Context) -> None:
    """Forward and backward leave every input's .data unchanged.

    Build new tensors for results and gradients instead of writing into an input's storage.
    """
    leaves = {"x": (_A, True), "w": (_SQUARE, True), "b": (_B, True)}
    programs = [
        # Every core op applied straight to leaves, so an op that writes into its input shows.
        _program(leaves, [("r", "relu", ["x"]), ("y", "sum", ["r"])]),
        _program(leaves, [("s", "add", ["x", "b"]), ("p", "mul", ["s", "b"]), ("y", "sum", ["p"])]),
        _program(leaves, [("p", "mul", ["x", "b"]), ("y", "sum", ["p"])]),
        _program(leaves, [("h", "matmul", ["x", "w"]), ("y", "sum", ["h"])]),
        _program(leaves, [("y", "sum", ["x"])]),
        _program(leaves, [("h", "matmul", ["x", "w"]), ("g", "mul", ["h", "b"]), ("k", "add", ["g", "x"]),
                          ("r", "relu", ["k"]), ("y", "sum", ["r"])]),
    ]
    errors = []
    for p in programs:
        # A run that raises still shows whether it wrote into its inputs.
        obs = ctx.run(p)
        if obs.error is not None:
            errors.append((p, obs.error))
        changed = [name for name, same in obs.leaf_data_unchanged.items() if not same]
        if changed:
            raise Failed(f"the .data of {', '.join(changed)} changed during forward/backward of {p.expression()}",
                         graph=p.expression(), snippet=reproduce(p, ctx.path, ctx.class_name))
    if len(errors) == len(programs):
        p, error = errors[0]
        raise CandidateError(f"no graph ran to the end, so nothing shows the inputs are left alone: "
                             f"{describe_error(error)}", graph=p.expression())


# ---- follow-ups ----------------------------------------------------------------------


@check("followups.broadcasting", "followups", "broadcasting", requires=CORE_MEMBERS | {"feature:broadcasting"})
def broadcasting(ctx: Context) -> None:
    """+ and * broadcast, and each operand's gradient is summed back to its own shape.

    The backward of an implicit copy is a sum: reduce the broadcast dimensions of each operand's gradient.
    """
    x = _t([[1.0, -2.0, 3.0], [0.5, 2.0, -1.0], [2.0, 0.0, 1.5], [-1.0, 1.0, 2.5]])
    cases = [
        _program({"x": (x, True), "b": (_t([0.5, -1.0, 2.0]), True)},
                 [("h", "add", ["x", "b"]), ("r", "relu", ["h"]), ("y", "sum", ["r"])]),
        _program({"x": (x, True), "c": (_t([[2.0], [-1.0], [0.5], [3.0]]), True)},
                 [("h", "mul", ["x", "c"]), ("k", "mul", ["h", "h"]), ("y", "sum", ["k"])]),
        _program({"x": (x, True), "s": (_t(1.5), True)},
                 [("h", "mul", ["s", "x"]), ("k", "add", ["h", "s"]), ("y", "sum", ["k"])]),
        _program({"u": (_t([[1.0], [2.0], [-1.0]]), True), "v": (_t([[3.0, -2.0, 0.5, 1.0]]), True)},
                 [("h", "add", ["u", "v"]), ("k", "mul", ["h", "v"]), ("y", "sum", ["k"])]),
    ]
    for p in cases:
        ctx.expect(p)


@check("followups.upstream", "followups", "upstream", requires=CORE_MEMBERS | {"feature:upstream"})
def upstream_gradient(ctx: Context) -> None:
    """backward(grad) on a non-scalar output uses the given upstream gradient.

    Seed the output's gradient with the tensor passed to backward instead of ones.
    """
    upstream = _t([[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]])
    p = _program({"x": (_A, True), "w": (_SQUARE, True)},
                 [("h", "matmul", ["x", "w"]), ("r", "relu", ["h"])], upstream=upstream)
    ctx.expect(p)


@check("followups.passes", "followups", "accumulation", requires=CORE_MEMBERS | {"feature:passes"})
def accumulation_across_passes(ctx: Context) -> None:
    """Two forward passes and two backward() calls add up in the leaves' grads, as in PyTorch.

    Leaf gradients accumulate across backward calls; only the user resets them.
    """
    p = _program({"x": (_A, True), "w": (_SQUARE, True)},
                 [("h", "matmul", ["x", "w"]), ("r", "relu", ["h"]), ("y", "sum", ["r"])], passes=2)
    ctx.expect(p)


@check("followups.no_grad", "followups", "memory", requires=CORE_MEMBERS | {"feature:no_grad"})
def no_grad_mode(ctx: Context) -> None:
    """Inside no_grad() results do not require grad and keep no reference to their inputs.

    Check the mode when a result is created: record no parents and save nothing while it is off.
    """
    facts = ctx.probe("no_grad", timeout=10.0)
    if "error" in facts:
        raise CandidateError(describe_error(facts["error"]))
    if facts.get("h_requires_grad") is not False or facts.get("z_requires_grad") is not False:
        raise Failed("a result computed inside no_grad() still requires grad")
    z = facts.get("z_value") or {}
    if z.get("values") != [2.0, 2.0, 12.0]:
        raise Failed(f"inside no_grad() (x * x + x).relu() of x = [1, -2, 3] gave {z.get('values')}, "
                     "expected [2.0, 2.0, 12.0]")
    if not facts.get("intermediate_freed"):
        raise Failed("a result computed inside no_grad() still holds a reference to its inputs, so nothing is freed")
    if facts.get("after_requires_grad") is not True:
        raise Failed("after leaving no_grad(), new results no longer require grad: the mode was not restored")
    if facts.get("after_exception_requires_grad") is not True:
        raise Failed("an exception inside no_grad() left gradient recording switched off (use try/finally)")


DEEP_CHAIN: Final = 100_000


@check("followups.deep_graph", "followups", "order", requires=CORE_MEMBERS, timeout=90.0, cost=2.5)
def deep_graph(ctx: Context) -> None:
    """Backward runs over a chain of 100,000 nodes without hitting the recursion limit.

    Replace recursion in the topological sort (and anywhere else in backward) with an explicit stack.
    """
    try:
        facts = ctx.probe("deep_chain", n=DEEP_CHAIN, timeout=30.0)
    except CandidateError as exc:
        raise Failed(f"the process died during the {DEEP_CHAIN:,}-node chain ({exc.message}). If backward "
                     "recurses, that is the C stack overflowing: raising the recursion limit only moves the "
                     "crash") from None
    error = facts.get("error")
    if error is not None:
        if error.get("type") == "RecursionError":
            raise Failed(f"RecursionError during {error.get('where')} on a {DEEP_CHAIN:,}-node chain: a recursive "
                         "graph walk cannot handle deep graphs")
        raise CandidateError(describe_error(error))
    grad = facts.get("grad") or {}
    if grad.get("values") != [float(DEEP_CHAIN + 1)]:
        raise Failed(f"on y = x + x + ... ({DEEP_CHAIN:,} additions) x.grad is {grad.get('values')}, "
                     f"expected [{DEEP_CHAIN + 1}.0]")


@check("followups.memory_release", "followups", "memory", requires=CORE_MEMBERS)
def memory_release(ctx: Context) -> None:
    """After backward() the graph's intermediate tensors can be freed while the output lives.

    Once a node has passed its gradient on, drop its references to inputs and saved tensors.
    """
    facts = ctx.probe("memory_release", timeout=10.0)
    if "error" in facts:
        raise CandidateError(describe_error(facts["error"]))
    x = torch.tensor(facts["x"]["values"], dtype=torch.float64).reshape(facts["x"]["shape"]).requires_grad_()
    w = torch.tensor(facts["w"]["values"], dtype=torch.float64).reshape(facts["w"]["shape"])
    h = (x @ w).relu()
    (h * h).sum().backward()
    got = facts.get("grad_x")
    # Float32 storage is charged once, by core.conventions: here it gets float32's tolerance.
    tol = tolerance_for(facts["x"].get("dtype", "float64"), transcendental=False)
    if not isinstance(got, dict) or "values" not in got or got.get("shape") != [4, 3] or compare(
            torch.tensor(got["values"], dtype=torch.float64).reshape(4, 3), x.grad, tol, "x.grad") is not None:
        # A wrong gradient, not a kept graph: the probe's graph as evidence, for the diagnosis to name its bug.
        program = _program({"x": (x.detach(), True), "w": (w, True)},
                           [("a", "matmul", ["x", "w"]), ("h", "relu", ["a"]), ("k", "mul", ["h", "h"]),
                            ("y", "sum", ["k"])])
        grad = torch.tensor(got["values"], dtype=torch.float64).reshape(got["shape"]) if isinstance(got, dict) \
            and "values" in got and "shape" in got else None
        raise Failed("the gradient of x in the memory-release probe is wrong",
                     hint="the probe's gradient is wrong before its memory is judged: fix the failing gradient "
                          "checks first").with_evidence(
            Evidence(program, Observation({}, {}, {"x": grad}, {}, None, 0.0), program.run_torch()))
    if facts.get("alive_after"):
        raise Failed(f"{facts['alive_after']} of 2 intermediate tensors are still alive after backward(): the "
                     "output keeps the whole graph (and its saved tensors) in memory")


@check("followups.cross_entropy", "followups", "numerics", requires=CORE_MEMBERS | {"cross_entropy"})
def cross_entropy(ctx: Context) -> None:
    """cross_entropy(target) matches torch, and stays finite for logits of magnitude 1e4.

    Subtract each row's maximum before exponentiating; the gradient is (softmax - onehot) / N.
    """
    g = torch.Generator().manual_seed(7)
    logits = torch.randn(4, 5, generator=g, dtype=torch.float64)
    target = torch.tensor([1, 0, 4, 1])
    for scale in (1.0, 1e4):
        p = _program({"z": (logits * scale, True), "t": (target, False)}, [("y", "cross_entropy", ["z", "t"])])
        ctx.expect(p, hint="large logits overflow exp(): shift by the row maximum" if scale > 1 else None)


# ---- extensions ------------------------------------------------------------------------


@check("extensions.numbers", "extensions", "ops", requires=CORE_MEMBERS | {"feature:numbers"})
def number_operands(ctx: Context) -> None:
    """Python numbers work as operands: 2 * a, a + 1, and the like.

    Treat a number as a constant that needs no gradient (define __radd__ and __rmul__ for 2 * a).
    """
    p = _program({"a": (_A, True)}, [("h", "mul", [2.0, "a"]), ("k", "add", ["h", 1.0]), ("m", "mul", ["k", "a"]),
                                     ("y", "sum", ["m"])])
    ctx.expect(p)



# ---- ties: every valid convention passes, the full gradient to every tied element does not ----


def _tied_groups_maximum(a: torch.Tensor, b: torch.Tensor) -> list[list[tuple[str, int]]]:
    return [[("a", i), ("b", i)] for i in range(a.numel()) if a.reshape(-1)[i] == b.reshape(-1)[i]]


def _tied_groups_pool(x: torch.Tensor, k: int) -> list[list[tuple[str, int]]]:
    n, c, h, w = x.shape
    flat = torch.arange(x.numel()).reshape(x.shape)
    groups = []
    for i in range(0, h, k):
        for j in range(0, w, k):
            window, where = x[0, 0, i:i + k, j:j + k].reshape(-1), flat[0, 0, i:i + k, j:j + k].reshape(-1)
            top = window == window.max()
            if int(top.sum()) > 1:
                groups.append([("x", int(p)) for p in where[top]])
    return groups


def _judge_ties(ctx: Context, program: Program, groups: list[list[tuple[str, int]]]) -> None:
    """Outside the tied elements the gradient is torch's; a tie's elements share its gradient in any proportion
    (all to one of them, split evenly) but together receive it exactly once."""
    expected = program.run_torch()
    obs = ctx.run(program)
    if obs.error is not None:
        raise CandidateError(describe_error(obs.error), graph=program.expression()).with_evidence(
            Evidence(program, obs, expected))
    tied = {(leaf, i) for group in groups for leaf, i in group}
    problem = None
    verdict = judge(program, obs, expected, ("values",))
    if verdict is not None:
        problem = verdict.message
    for leaf in (leaf for leaf in program.leaves if leaf.requires_grad and problem is None):
        got, want = obs.grads.get(leaf.name), expected.grads[leaf.name]
        if not isinstance(got, torch.Tensor) or got.numel() != want.numel():
            problem = judge(program, obs, expected, ("grads",)).message if judge(
                program, obs, expected, ("grads",)) else f"{leaf.name}.grad is missing"
            break
        g, w = got.reshape(-1).to(torch.float64), want.reshape(-1)
        for i in range(w.numel()):
            if (leaf.name, i) not in tied and not math.isclose(float(g[i]), float(w[i]), rel_tol=1e-6, abs_tol=1e-9):
                problem = f"{leaf.name}.grad at flat index {i} is {float(g[i]):g}, expected {float(w[i]):g}"
                break
    if problem is None:
        for group in groups:
            got = {(leaf, i): float(obs.grads[leaf].reshape(-1)[i]) for leaf, i in group}
            total = sum(float(expected.grads[leaf].reshape(-1)[i]) for leaf, i in group)
            shares = sum(got.values())
            places = ", ".join(f"{leaf}[{i}]" for leaf, i in group)
            if not math.isclose(shares, total, rel_tol=1e-6, abs_tol=1e-9) or min(got.values()) < -1e-9:
                many = " (the full gradient to every tied element)" if math.isclose(
                    shares, total * len(group), rel_tol=1e-6) else ""
                problem = (f"the tied elements {places} received {', '.join(f'{v:g}' for v in got.values())}, "
                           f"{shares:g} in all, where their gradient is {total:g}{many}: give it to one of them or "
                           "split it, exactly once")
                break
    if problem is not None:
        raise Failed(problem, graph=program.expression(),
                     snippet=reproduce(program, ctx.path, ctx.class_name)).with_evidence(
            Evidence(program, obs, expected))


@check("extensions.ties.maximum", "extensions", "routing", requires=CORE_MEMBERS | {"maximum"})
def maximum_ties(ctx: Context) -> None:
    """maximum at a tie: the gradient goes to one side or is split, exactly once.

    At a tie either operand may take the gradient, or both half of it (torch splits it); both taking all of it
    counts it twice.
    """
    a, b = _t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), _t([[1.0, 0.0, 3.0], [5.0, 5.0, 2.0]])
    v = _t([[1.0, 1.5, 2.0], [2.5, 3.0, 3.5]])
    p = _program({"a": (a, True), "b": (b, True), "v": (v, False)},
                 [("z", "maximum", ["a", "b"]), ("w", "mul", ["z", "v"]), ("y", "sum", ["w"])])
    _judge_ties(ctx, p, _tied_groups_maximum(a, b))


@check("extensions.ties.max_pool2d", "extensions", "routing", requires=CORE_MEMBERS | {"max_pool2d"})
def max_pool_ties(ctx: Context) -> None:
    """max_pool2d with a tied maximum: the window's gradient goes to one of them or is split, exactly once.

    Torch gives it to the first maximum; any one of them, or an even split, is as valid; every tied element
    taking all of it is not.
    """
    x = _t([[[[1.0, 3.0, 2.0, 5.0], [3.0, 0.0, 4.0, 1.0], [7.0, 7.0, 0.0, -1.0], [7.0, 7.0, 6.0, 2.0]]]])
    v = _t([[[[1.0, 1.5], [2.0, 2.5]]]])
    p = _program({"x": (x, True), "v": (v, False)},
                 [("z", "max_pool2d", ["x"]), ("w", "mul", ["z", "v"]), ("y", "sum", ["w"])])
    p = Program(p.leaves, (Step("z", "max_pool2d", ("x",), (("k", 2),)), *p.steps[1:]), p.output)
    _judge_ties(ctx, p, _tied_groups_pool(x, 2))
