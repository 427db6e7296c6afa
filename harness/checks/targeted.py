"""The targeted checks: each rule of the contract as its own check with its own message.

Checks are declared with ``@check`` in the order they run; the docstring's
first line is the title a candidate reads. A check passes by returning, fails
by raising ``Failed`` (a wrong answer) and errs by raising ``CandidateError``
or ``CandidateTimeout`` (the candidate's code raised, died or hung).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Final

import torch

from harness.checks.context import CandidateError, CandidateTimeout, Context, Failed, describe_error
from harness.ops import ops_for_level
from harness.program import Leaf, Program, Step

__all__ = ["CheckSpec", "CHECKS", "check"]


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
          timeout: float = 30.0, cost: float = 0.1) -> Callable[[Callable[[Context], None]], Callable[[Context], None]]:
    def register(fn: Callable[[Context], None]) -> Callable[[Context], None]:
        CHECKS.append(CheckSpec(id, level, concept, fn, frozenset(requires), timeout, cost))
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
    obs = ctx.run(p)
    if obs.error is not None:
        raise CandidateError(describe_error(obs.error), graph=p.expression())
    for name in ("b", "w"):
        if obs.grads.get(name) is not None:
            raise Failed(f"{name} does not require grad, but {name}.grad was set after backward", graph=p.expression(),
                         snippet=p.snippet(ctx.module_name, ctx.class_name))
    ctx.expect(p, parts=("grads",))


@check("core.grad_types", "core", "shapes", requires=CORE_MEMBERS)
def grads_have_shapes(ctx: Context) -> None:
    """Every gradient is a plain torch tensor with its own tensor's shape.

    A gradient must have exactly the shape of the tensor it belongs to; sum's backward must expand.
    """
    p = _program({"x": (_A, True), "w": (_t([[1.0, 0.0, -1.0, 2.0]] * 3) + _SQUARE[:, :1], True),
                  "b": (_t([[0.5, -0.5, 1.0, 2.0], [1.0, 1.0, -2.0, 0.0]]), True)}, [
        ("h", "matmul", ["x", "w"]), ("bb", "mul", ["b", "b"]), ("z", "add", ["h", "bb"]),
        ("r", "relu", ["z"]), ("y", "sum", ["r"]),
    ])
    ctx.expect(p, parts=("error", "grad_types"))
    q = _program({"x": (_A, True)}, [("y", "sum", ["x"])])
    ctx.expect(q, parts=("error", "grad_types"))


@check("core.accumulation", "core", "accumulation", requires=CORE_MEMBERS)
def reuse_accumulates(ctx: Context) -> None:
    """A tensor used several times gets the sum of all its gradient contributions.

    When a tensor feeds several operations (or both sides of one), add up every contribution with +=.
    """
    cases = [
        _program({"a": (_A, True)}, [("s", "mul", ["a", "a"]), ("y", "sum", ["s"])]),
        _program({"a": (_A, True)}, [("s", "add", ["a", "a"]), ("y", "sum", ["s"])]),
        _program({"x": (_SQUARE, True)}, [("s", "matmul", ["x", "x"]), ("y", "sum", ["s"])]),
        _program({"a": (_A, True), "b": (_B, True)}, [
            ("p", "mul", ["a", "b"]), ("q", "add", ["a", "b"]), ("r", "relu", ["a"]),
            ("s", "add", ["p", "q"]), ("t", "add", ["s", "r"]), ("y", "sum", ["t"]),
        ]),
    ]
    for p in cases:
        ctx.expect(p, hint="the tensor used more than once must receive the sum of all contributions")


def _diamonds(levels: int) -> Program:
    """h -> (h + z, h + z) -> their sum, stacked: the gradient doubles per level."""
    steps: list[tuple] = []
    h = "x"
    for i in range(levels):
        steps += [(f"p{i}", "add", [h, "z"]), (f"q{i}", "add", [h, "z"]), (f"h{i}", "add", [f"p{i}", f"q{i}"])]
        h = f"h{i}"
    steps.append(("y", "sum", [h]))
    return _program({"x": (_t([1.0, -1.0]), True), "z": (_t([0.0, 0.0]), False)}, steps)


@check("core.order", "core", "order", requires=CORE_MEMBERS, timeout=20.0)
def reverse_topological_order(ctx: Context) -> None:
    """Backward visits nodes in reverse topological order: each once, after all its consumers.

    Sort the graph topologically once, then walk it backwards, so a node passes its gradient on only when it
    is complete.
    """
    small = _diamonds(10)
    ctx.expect(small, timeout=10.0,
               hint="a node's gradient was passed on before all its consumers had contributed")
    deep = _diamonds(40)
    started = time.perf_counter()
    try:
        obs = ctx.run(deep, timeout=5.0, observe="output")
    except CandidateTimeout:
        raise Failed("backward did not finish within 5 s on 40 stacked diamonds (122 nodes): it walks every path "
                     "through the graph (2^40 of them) instead of visiting each node once in reverse "
                     "topological order", graph="40 stacked diamonds: p = h + z; q = h + z; h = p + q") from None
    elapsed = time.perf_counter() - started
    if obs.error is not None:
        raise CandidateError(describe_error(obs.error))
    if elapsed > 1.0:
        raise Failed(f"backward on 40 stacked diamonds (122 nodes) took {elapsed:.2f} s; a reverse topological "
                     "walk takes milliseconds", seconds=elapsed)


def _wide_tree(width: int) -> Program:
    """``width`` products of one leaf, summed pairwise: many nodes, depth ~log2(width)."""
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


@check("core.linear_time", "core", "linearity", requires=CORE_MEMBERS, timeout=60.0, cost=1.0)
def backward_is_linear(ctx: Context) -> None:
    """Backward takes time linear in the size of the graph.

    Keep visited nodes in a set (keyed by id), not a list: membership tests must be O(1).
    """
    timings = []
    for width, runs in ((1024, 2), (8192, 1)):
        program = _wide_tree(width)
        expected_grad = 2.0 * width
        best = float("inf")
        for _ in range(runs):
            obs = ctx.run(program, timeout=40.0, observe="output", guard=False)
            if obs.error is not None:
                raise CandidateError(describe_error(obs.error))
            grad = obs.grads.get("x")
            if not isinstance(grad, torch.Tensor) or not torch.allclose(grad, torch.full_like(grad, expected_grad)):
                raise Failed(f"on a wide graph of {len(program.steps)} nodes x.grad is {grad}, expected "
                             f"{expected_grad:g} everywhere")
            best = min(best, float(obs.raw.get("backward_seconds", obs.seconds)))
        timings.append((len(program.steps), best))
    (n1, t1), (n2, t2) = timings
    ratio = t2 / max(t1, 1e-3)
    # Eight times the nodes: a linear backward takes about 8x as long, a quadratic one about 64x.
    if ratio > 24 and t2 > 0.3:
        raise Failed(f"backward over {n2} nodes took {t2:.2f} s against {t1:.3f} s for {n1}: {ratio:.0f}x the "
                     "time for 8x the nodes, so backward is not linear in the graph's size", timings=timings)


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
                         graph=p.expression(), snippet=p.snippet(ctx.module_name, ctx.class_name))
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


@check("followups.passes", "followups", "accumulation", requires=CORE_MEMBERS)
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
        facts = ctx.probe("deep_chain", n=DEEP_CHAIN, timeout=60.0)
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
    if not isinstance(got, dict) or "values" not in got or not torch.allclose(
            torch.tensor(got["values"], dtype=torch.float64).reshape(got["shape"]) if got.get("shape") == [4, 3]
            else torch.zeros(0), x.grad, rtol=1e-7, atol=1e-7):
        raise Failed("the gradient of x in the memory-release probe is wrong")
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

