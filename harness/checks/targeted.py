"""The targeted checks: each rule of the contract as its own check with its own message.

Checks are declared with ``@check`` (``registry.py``) in the order they run; the docstring's
first line is the title a candidate reads. A check passes by returning, fails
by raising ``Failed`` (a wrong answer) and errs by raising ``CandidateError``
or ``CandidateTimeout`` (the candidate's code raised, died or hung).
"""

from __future__ import annotations

from typing import Final

import torch

from harness.checks.builders import program as _program, tensor as _t
from harness.checks.context import CandidateError, Context, Evidence, Failed, Observation, describe_error, judge
from harness.checks.registry import check
from harness.checks.snippets import reproduce, tensor_literal
from harness.checks.timing import (GROWTH_WIDTHS, every_path, measure_growth, stacked_diamonds, verify_wide,
                                   wide_graph)
from harness.compare import compare, tolerance_for
from harness.ops import ops_for_level
from harness.program import Program

__all__ = ["CORE_MEMBERS", "ORDER_GRAPHS"]

CORE_MEMBERS: Final = frozenset({"backward"} | {spec.member for spec in ops_for_level("core")})
"""What every check needs to be attempted: the core ops and backward."""


_A = _t([[1.0, -2.0, 3.0], [0.5, 2.0, -1.0]])
_B = _t([[2.0, 1.0, -1.0], [-3.0, 0.5, 2.0]])
_SQUARE = _t([[1.0, 2.0, 0.0], [-1.0, 3.0, 1.0], [2.0, -2.0, 1.0]])  # not symmetric: a flipped transpose shows
_SYMMETRIC = _t([[1.0, 2.0, -1.0], [2.0, 3.0, 0.5], [-1.0, 0.5, 2.0]])  # a flipped transpose cannot show


# ---- core --------------------------------------------------------------------------


@check("core.requires_grad", "core", "requires_grad", requires=CORE_MEMBERS, isolated=False)
def requires_grad_propagates(ctx: Context) -> None:
    """A result requires grad exactly when one of its inputs does.

    Decide requires_grad when the result is created, from its inputs.
    """
    p = _program({"a": (_A, True), "b": (_B, False), "c": (_B * 2, False), "w": (_SQUARE, False)}, [
        ("p", "mul", ["b", "c"]), ("q", "add", ["a", "b"]), ("r", "matmul", ["p", "w"]),
        ("s", "add", ["r", "q"]), ("t", "relu", ["s"]), ("y", "sum", ["t"]),
    ])
    ctx.expect(p, parts=("error", "requires_grad"))


@check("core.grad_none", "core", "requires_grad", requires=CORE_MEMBERS, isolated=False)
def grad_stays_none(ctx: Context) -> None:
    """A tensor that does not require grad keeps grad None after backward.

    Only tensors created with requires_grad=True (and results built from them) take part in backward.
    """
    p = _program({"a": (_A, True), "b": (_B, False), "w": (_SQUARE, False)}, [
        ("p", "mul", ["a", "b"]), ("r", "matmul", ["p", "w"]), ("y", "sum", ["r"]),
    ])
    # None-ness only: the values of a's gradient are the other checks' business.
    ctx.expect(p, parts=("error", "none"))


@check("core.grad_types", "core", "shapes", requires=CORE_MEMBERS, isolated=False)
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


@check("core.conventions", "core", "conventions", requires=CORE_MEMBERS, isolated=False)
def torch_conventions(ctx: Context) -> None:
    """Results follow torch's conventions: sum is 0-d, float64 stays float64, any one-element output backpropagates.

    Torch's sum() returns a 0-d tensor (shape ()), keeps the dtype it is given, and backward() accepts every
    one-element output (seed it with ones of the output's own shape). The other checks forgive these; this one
    does not.
    """
    found: list[str] = []
    evidence: list[Evidence] = []
    asserting: list[list[str]] = []
    reasons: list[str] = []
    summed = _program({"x": (_A, True)}, [("y", "sum", ["x"])])
    obs = _run_plain(ctx, summed)
    got = obs.values.get("y")
    if isinstance(got, torch.Tensor) and got.dim() != 0:
        found.append(f"x.sum() has shape {tuple(got.shape)}, torch gives a 0-d tensor (shape ())")
        evidence.append(Evidence(summed, obs, summed.run_torch()))
        asserting.append(["assert y.data.dim() == 0, f'x.sum() has shape {tuple(y.data.shape)}, torch gives shape ()'"])
        reasons.append("sum_not_0d")
    stored = {obs.dtype("leaf_data", "x"), obs.dtype("values", "y")} - {None, "float64"}
    if stored:
        found.append(f"Tensor(float64 data) holds {', '.join(sorted(stored))}: keep the dtype you are given "
                     "(torch does), or every result loses precision")
        evidence.append(Evidence(summed, obs, summed.run_torch()))
        asserting.append(["assert x.data.dtype == torch.float64 and y.data.dtype == torch.float64, "
                          "f'x holds {x.data.dtype} and x.sum() {y.data.dtype}, torch keeps float64'"])
        reasons.append("stored_float32")
    grad_dtype, data_dtype = obs.dtype("grads", "x"), obs.dtype("leaf_data", "x")
    floats = grad_dtype and data_dtype and all(d.startswith(("float", "bfloat")) for d in (grad_dtype, data_dtype))
    if floats and grad_dtype != data_dtype:  # an integer gradient loses values: core.grad_types fails it
        found.append(f"x.grad has dtype {grad_dtype} where x holds {data_dtype}: torch gives a gradient its "
                     "tensor's dtype (build it with zeros_like/ones_like of the data)")
        evidence.append(Evidence(summed, obs, summed.run_torch()))
        asserting.append(["assert x.grad.dtype == x.data.dtype, f'x.grad has dtype {x.grad.dtype}, x holds "
                          "{x.data.dtype}'"])
        reasons.append("grad_dtype")
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
        asserting.append([])
        reasons.append("one_element_root")
    else:
        verdict = judge(rooted, obs, expected, ("grads",))
        if verdict is not None:
            found.append(f"with a one-element output of shape (1, 1): {verdict.message} (seed backward with ones "
                         "of the output's own shape)")
            evidence.append(Evidence(rooted, obs, expected))
            asserting.append([])
            reasons.append("one_element_root")
    if found:
        first = evidence[0]
        snippet = reproduce(first.program, ctx.path, ctx.class_name, first.expected, first.observation,
                            asserting=asserting[0])
        raise Failed("; ".join(found), reason=reasons[0], graph=first.program.expression(),
                     snippet=snippet).with_evidence(first)


def _run_plain(ctx: Context, program: Program, allow_error: bool = False) -> Observation:
    obs = ctx.run(program)
    if obs.error is not None and not allow_error:
        raise CandidateError(describe_error(obs.error), graph=program.expression()).with_evidence(
            Evidence(program, obs, program.run_torch()))
    return obs


@check("core.accumulation", "core", "accumulation", requires=CORE_MEMBERS, isolated=False)
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



@check("core.order", "core", "order", requires=CORE_MEMBERS, timeout=20.0)
def reverse_topological_order(ctx: Context) -> None:
    """Backward visits nodes in reverse topological order: each once, after all its consumers.

    Sort the graph topologically once, then walk it backwards, so a node passes its gradient on only when it
    is complete.
    """
    for program in ORDER_GRAPHS:
        ctx.expect(program, hint="a node's gradient was passed on before all its consumers had contributed")
    every_path(ctx)




@check("core.linear_time", "core", "linearity", requires=CORE_MEMBERS, timeout=90.0, cost=1.0)
def backward_is_linear(ctx: Context) -> None:
    """Backward takes time linear in the size of the graph.

    Keep visited nodes in a set (keyed by id), not a list: membership tests must be O(1).
    """
    growth = measure_growth(ctx, [wide_graph(w) for w in GROWTH_WIDTHS], verify=verify_wide)
    if growth.points and growth.superlinear:
        (n0, t0), (n1, t1) = growth.points[0], growth.points[-1]
        raise Failed(f"forward and backward over {n1} nodes used {t1:.2f} s of CPU against {t0:.3f} s for {n0}: "
                     f"the time grows like n^{growth.exponent:.1f} (linear is n^1), so backward is not linear in "
                     "the graph's size", reason="superlinear", cpu_seconds=[list(point) for point in growth.points]
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
            given = {leaf.name: leaf.value for leaf in p.leaves}
            asserting = [f"assert torch.equal({name}.data, {tensor_literal(given[name])}), "
                         f"f'{name}.data changed during forward/backward: {{{name}.data}}'" for name in changed]
            raise Failed(f"the .data of {', '.join(changed)} changed during forward/backward of {p.expression()}",
                         reason="input_changed", graph=p.expression(),
                         snippet=reproduce(p, ctx.path, ctx.class_name, asserting=asserting))
    if len(errors) == len(programs):
        p, error = errors[0]
        raise CandidateError(f"no graph ran to the end, so nothing shows the inputs are left alone: "
                             f"{describe_error(error)}", graph=p.expression())


# ---- follow-ups ----------------------------------------------------------------------


@check("followups.broadcasting", "followups", "broadcasting", requires=CORE_MEMBERS | {"feature:broadcasting"},
       isolated=False)
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


@check("followups.upstream", "followups", "upstream", requires=CORE_MEMBERS | {"feature:upstream"}, isolated=False)
def upstream_gradient(ctx: Context) -> None:
    """backward(grad) on a non-scalar output uses the given upstream gradient.

    Seed the output's gradient with the tensor passed to backward instead of ones.
    """
    upstream = _t([[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]])
    p = _program({"x": (_A, True), "w": (_SQUARE, True)},
                 [("h", "matmul", ["x", "w"]), ("r", "relu", ["h"])], upstream=upstream)
    ctx.expect(p)


@check("followups.passes", "followups", "accumulation", requires=CORE_MEMBERS | {"feature:passes"}, isolated=False)
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
        raise Failed("a result computed inside no_grad() still requires grad", reason="no_grad_records")
    z = facts.get("z_value") or {}
    if z.get("values") != [2.0, 2.0, 12.0]:
        raise Failed(f"inside no_grad() (x * x + x).relu() of x = [1, -2, 3] gave {z.get('values')}, "
                     "expected [2.0, 2.0, 12.0]", reason="no_grad_values")
    if not facts.get("intermediate_freed"):
        raise Failed("a result computed inside no_grad() still holds a reference to its inputs, so nothing is freed",
                     reason="no_grad_keeps_inputs")
    if facts.get("after_requires_grad") is not True:
        raise Failed("after leaving no_grad(), new results no longer require grad: the mode was not restored",
                     reason="no_grad_not_restored")
    if facts.get("nested_requires_grad") is not False:
        raise Failed("inside no_grad(), after a nested no_grad() block ends, results require grad again: leaving a "
                     "block must restore the mode it found (off, here), not switch recording on",
                     reason="no_grad_nested")
    if facts.get("after_exception_requires_grad") is not True:
        raise Failed("an exception inside no_grad() left gradient recording switched off (use try/finally)",
                     reason="no_grad_not_restored_after_exception")


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
                     "crash", reason="process_died") from None
    error = facts.get("error")
    if error is not None:
        if error.get("type") == "RecursionError":
            raise Failed(f"RecursionError during {error.get('where')} on a {DEEP_CHAIN:,}-node chain: a recursive "
                         "graph walk cannot handle deep graphs", reason="recursion")
        raise CandidateError(describe_error(error))
    grad = facts.get("grad") or {}
    if grad.get("values") != [float(DEEP_CHAIN + 1)]:
        raise Failed(f"on y = x + x + ... ({DEEP_CHAIN:,} additions) x.grad is {grad.get('values')}, "
                     f"expected [{DEEP_CHAIN + 1}.0]", reason="wrong_gradient")


@check("followups.memory_release", "followups", "memory", requires=CORE_MEMBERS)
def memory_release(ctx: Context) -> None:
    """After backward() the graph's intermediate tensors can be freed while the output lives.

    Once a node has passed its gradient on, drop its references to inputs and saved tensors.
    """
    facts = ctx.probe("memory_release", timeout=10.0)
    if "error" in facts:
        raise CandidateError(describe_error(facts["error"]))
    x = torch.tensor(facts["x"]["values"], dtype=torch.float64).reshape(facts["x"]["shape"])
    w = torch.tensor(facts["w"]["values"], dtype=torch.float64).reshape(facts["w"]["shape"])
    # The probe's graph: h = relu(x @ w), then (h * h).sum(); torch's outcome is what x.grad must be.
    program = _program({"x": (x, True), "w": (w, True)},
                       [("a", "matmul", ["x", "w"]), ("h", "relu", ["a"]), ("k", "mul", ["h", "h"]), ("y", "sum", ["k"])])
    expected = program.run_torch()
    got = facts.get("grad_x")
    grad = torch.tensor(got["values"], dtype=torch.float64).reshape(got["shape"]) if isinstance(got, dict) \
        and "values" in got and "shape" in got else None
    # Float32 storage is charged once, by core.conventions: here it gets float32's tolerance.
    tol = tolerance_for(facts["x"].get("dtype", "float64"), transcendental=False)
    if grad is None or got["shape"] != [4, 3] or compare(grad, expected.grads["x"], tol, "x.grad") is not None:
        # A wrong gradient, not a kept graph: the probe's graph as evidence, for the diagnosis to name its bug.
        raise Failed("the gradient of x in the memory-release probe is wrong", reason="wrong_gradient",
                     hint="the probe's gradient is wrong before its memory is judged: fix the failing gradient "
                          "checks first").with_evidence(
            Evidence(program, Observation({}, {}, {"x": grad}, {}, None, 0.0), expected))
    if facts.get("alive_after"):
        raise Failed(f"{facts['alive_after']} of 2 intermediate tensors are still alive after backward(): the "
                     "output keeps the whole graph (and its saved tensors) in memory", reason="graph_alive")


@check("followups.cross_entropy", "followups", "numerics", requires=CORE_MEMBERS | {"cross_entropy"}, isolated=False)
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


@check("extensions.numbers", "extensions", "ops", requires=CORE_MEMBERS | {"feature:numbers"}, isolated=False)
def number_operands(ctx: Context) -> None:
    """Python numbers work as operands: 2 * a, a + 1, and the like.

    Treat a number as a constant that needs no gradient (define __radd__ and __rmul__ for 2 * a).
    """
    p = _program({"a": (_A, True)}, [("h", "mul", [2.0, "a"]), ("k", "add", ["h", 1.0]), ("m", "mul", ["k", "a"]),
                                     ("y", "sum", ["m"])])
    ctx.expect(p)



