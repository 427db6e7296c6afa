"""Hypothesis strategies for random graph programs, read from the op table alone.

``op_graphs`` draws a few leaves, then a plan of steps ``(op, i, j, ...)`` in
which ``i`` and ``j`` pick earlier nodes modulo their count (0 is ``x0``,
k >= 1 the k-th most recent node). Any plan is a valid DAG, so every shrink
hypothesis tries is one too, and shrinking the picks towards 0 and 1 drives a
failure towards reuse: ``x0 + x0`` is the smallest witness of an accumulation
bug, ``x2 = x0 + x0; x3 = x2 + x2`` of a missing topological order. A step
whose operands the op rejects is skipped rather than redrawn, so a shrink
never has to find a new valid draw.

``focus="X"`` builds every program around op X: when the plan leaves X off
the path to the output, a valid X step is appended on top of it, and a draw
where no X step is valid at all (values shrunk out of X's domain) is
rejected, so a shrunk counterexample of an op check always contains its op.

What the strategy knows about an op comes from its ``OpSpec`` alone: which
slots take int64 indices, the rank its operands must have (4-D image leaves are
drawn for the (N, C, H, W) ops), whether it maps integers to integers, and how
to draw each param that has no default. Adding an op needs no change here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Final, Sequence

import torch
from hypothesis import assume
from hypothesis import strategies as st

from harness.ops import INDEX, LEVELS, OPS, TENSOR, OpSpec, broadcast_shape, check_operands, needs_broadcasting, op
from harness.program import Leaf, Program, Step

__all__ = ["op_graphs", "programs_for_level", "reaches_output", "broadcasts_implicitly", "IMAGE_HW"]

MAX_LEAVES: Final = 4
MAX_MAGNITUDE: Final = 1e4
"""Steps whose values leave this range are skipped: exp(exp(x)) says nothing
about an engine that exp(x) did not, and huge values blur the tolerance."""

MIN_MAGNITUDE: Final = 1 / 64
"""Smallest nonzero magnitude of a float leaf value."""

NUMBERS: Final = (2, -1, 0.5, 3, 1.5)
"""Python numbers used as operands when ``numbers=True``; shrinks towards 2."""

KINK_NUDGE: Final = 1e-9
"""Relative nudge used to tell whether a non-smooth op sits on a kink."""

# Leaf value families, drawn per leaf; shrinking goes towards the first.
MIXED, POSITIVE, DISTINCT = "mixed", "positive", "distinct"
_FAMILIES: Final = (MIXED, POSITIVE, DISTINCT)

# Spatial size of the 4-D leaves: non-square so H/W mix-ups show, even so k=2 pools.
IMAGE_HW: Final = (2, 4)


@dataclass(frozen=True)
class _Node:
    """A node the plan can pick: its name, oracle value and what we know about it."""

    name: str
    value: torch.Tensor
    exact: bool
    """Every correct engine holds the same bits here: a leaf, or integers computed from
    integers without rounding. Exact zeros before relu and exact ties are then well
    defined; elsewhere a non-smooth op must keep clear of its kinks."""


@st.composite
def op_graphs(
    draw: st.DrawFn,
    *,
    ops: Sequence[str],
    max_steps: int = 6,
    broadcasting: bool = False,
    numbers: bool = False,
    integer_values: bool = True,
    focus: str | None = None,
) -> Program:
    """Valid programs over ``ops`` (names from the op table), at most ``max_steps`` ops deep.

    Leaves: 2-4 tensors with shapes from ``{(n, m), (m, n), (n, n), (m, m)}`` for
    dims ``n, m`` in 1..3 drawn once, so square and non-square products and reuse
    are common; ``broadcasting=True`` adds ``(m,)``, ``(1, m)``, ``(n, 1)`` and
    ``()``. 4-D leaves (distinct values, so pooling has no ties) are added only when
    a requested op needs them, int64 leaves (``requires_grad=False``) only when an
    op has an index slot. Values are integers in -3..3 (positive or distinct for
    some leaves, so log, pow, div and maximum get valid inputs), or bounded floats
    when ``integer_values=False``. Some leaves do not require grad.

    Steps: each picks an op and its operands among earlier nodes by index modulo
    their count; invalid picks, broadcasts the caller did not ask for, huge values
    and non-smooth ops sitting on an inexact kink are skipped. The output is the
    last step; an output that is not 0-d is summed when ``"sum"`` is allowed (so the
    root is 0-d, as torch's sum gives), otherwise gets a random upstream gradient.
    With ``focus`` (one of ``ops``), that op is always on a path to the output.

    Shrinking: fewer steps and leaves, op picks towards ``ops[0]``, operand picks
    towards ``x0`` and then the most recent node, dims towards 1, values towards
    0, every leaf towards requiring grad, no numbers.
    """
    specs = _usable_specs(tuple(ops))
    if not specs:
        raise ValueError(f"none of {list(ops)!r} can be generated")
    if focus is not None and focus not in {spec.name for spec in specs}:
        raise ValueError(f"focus {focus!r} is not one of the ops {list(ops)!r}")
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    n, m = draw(st.integers(1, 3)), draw(st.integers(1, 3))

    nodes: list[_Node] = []
    leaves: list[Leaf] = []

    def add_leaf(value: torch.Tensor, requires_grad: bool) -> None:
        name = f"x{len(leaves)}"
        leaves.append(Leaf(name, value, requires_grad and value.is_floating_point()))
        nodes.append(_Node(name, value, exact=True))

    shapes = [(n, m), (m, n), (n, n), (m, m)]
    if broadcasting:
        shapes += [(m,), (1, m), (n, 1), ()]
    for index in range(draw(st.integers(2, MAX_LEAVES))):
        shape = draw(st.sampled_from(shapes))
        family = draw(st.sampled_from(_FAMILIES))
        # The first leaf always requires grad, so most graphs have a gradient to check.
        requires_grad = index == 0 or draw(st.integers(0, 3)) != 3
        add_leaf(draw(_values(shape, family, integer_values)), requires_grad)
    if any(spec.rank == 4 for spec in specs):
        image = (n, m, *IMAGE_HW)
        add_leaf(draw(_values(image, DISTINCT, integer_values)), draw(st.integers(0, 3)) != 3)
        if any(spec.rank == 4 and spec.slots.count(TENSOR) > 1 for spec in specs):
            kernel = (n, m, draw(st.integers(1, IMAGE_HW[0])), draw(st.integers(1, 2)))
            add_leaf(draw(_values(kernel, MIXED, integer_values)), draw(st.integers(0, 3)) != 3)
    if any(INDEX in spec.slots for spec in specs):
        # Shape (n,) with values below m: class targets for (n, m) logits, ids for an (m, .) table.
        ids = draw(st.lists(st.integers(0, m - 1), min_size=n, max_size=n))
        add_leaf(torch.tensor(ids, dtype=torch.int64), False)

    plan = draw(st.lists(_step_plans(len(specs)), min_size=1, max_size=max_steps))
    steps: list[Step] = []
    for op_pick, first, second, variant in plan:
        spec = specs[op_pick]
        made = _make_step(spec, nodes, (first, second), variant, numbers, broadcasting, len(leaves) + len(steps))
        if made is not None:
            step, node = made
            steps.append(step)
            nodes.append(node)
    if focus is not None and not reaches_output(steps, focus):
        # The focus op goes on top of what was drawn (its latest node first), so the
        # rest of the graph still feeds the output through it.
        made = _first_valid_step([op(focus)], nodes, broadcasting, len(leaves) + len(steps))
        assume(made is not None)  # every operand is outside the op's domain: not an example of this op
        step, node = made
        steps.append(step)
        nodes.append(node)
    if not steps:
        # Every drawn step was invalid: take the first valid one in a fixed order instead,
        # so rarely valid ops (conv2d, cross_entropy) still appear.
        made = _first_valid_step(specs, nodes, broadcasting, len(leaves))
        assume(made is not None)
        step, node = made
        steps.append(step)
        nodes.append(node)

    output = nodes[-1]
    upstream = None
    if output.value.dim() != 0:
        total = _sum_step(specs, output, len(leaves) + len(steps))
        if total is not None:
            steps.append(total)
        elif output.value.numel() != 1:
            upstream = draw(_upstreams(tuple(output.value.shape), integer_values))
    return Program(tuple(leaves), tuple(steps), steps[-1].name, upstream)


def programs_for_level(level: str, **options: Any) -> st.SearchStrategy[Program]:
    """``op_graphs`` over every op of ``level`` and the levels below it."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; levels: {', '.join(LEVELS)}")
    allowed = LEVELS[: LEVELS.index(level) + 1]
    return op_graphs(ops=[name for name, spec in OPS.items() if spec.level in allowed], **options)


def _draw_from_the_seed_alone() -> None:
    """Make what hypothesis draws depend on the seed alone, never on which modules are loaded.

    Hypothesis (6.131 and later) mixes literals found in every module outside the standard
    library and site-packages into its draws: the grader's own modules with an editable
    install, a test suite's, a batch runner's. The same seed would then draw other graphs
    depending on how the grader was installed and started; a grade must not.
    """
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # a hypothesis without local constants draws from the seed alone already
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        nothing = providers.Constants()
        providers._get_local_constants = lambda: nothing


_draw_from_the_seed_alone()


# ---- leaf values ---------------------------------------------------------------


@functools.lru_cache(maxsize=None)  # building strategies is not free; these repeat
def _values(shape: tuple[int, ...], family: str, integer_values: bool) -> st.SearchStrategy[torch.Tensor]:
    size = math.prod(shape)
    if family == DISTINCT:
        # A permutation around 0: no two elements tie, which max and max-pool need.
        return st.permutations(range(size)).map(
            lambda perm: torch.tensor([v - size // 2 for v in perm], dtype=torch.float64).reshape(shape)
        )
    if integer_values:
        low = 1 if family == POSITIVE else -3
        elements: st.SearchStrategy[float] = st.integers(low, 3).map(float)
    else:
        low = 0.25 if family == POSITIVE else -3.0
        # Tiny magnitudes become exact zeros: dividing by 1e-300 tests overflow, not gradients.
        elements = st.floats(low, 3.0, allow_nan=False, allow_infinity=False).map(
            lambda v: v if abs(v) >= MIN_MAGNITUDE else 0.0
        )
    return st.lists(elements, min_size=size, max_size=size).map(
        lambda vs: torch.tensor(vs, dtype=torch.float64).reshape(shape)
    )


@functools.lru_cache(maxsize=None)
def _upstreams(shape: tuple[int, ...], integer_values: bool) -> st.SearchStrategy[torch.Tensor]:
    # Never all ones: a rule that ignores the upstream gradient must show.
    elements: st.SearchStrategy[float] = (
        st.sampled_from([2.0, -1.0, 3.0, -2.0, 1.0, -3.0]) if integer_values
        else st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False).map(
            lambda v: v if abs(v) >= MIN_MAGNITUDE else 0.0
        )
    )
    size = math.prod(shape)
    return st.lists(elements, min_size=size, max_size=size).map(
        lambda vs: torch.tensor(vs, dtype=torch.float64).reshape(shape)
    )


# ---- steps ---------------------------------------------------------------------

_PICK = st.integers(0, 63)
_PARAM_PICKS, _NUMBER_FLAGS = 8, 5
_VARIANTS = _PARAM_PICKS * _NUMBER_FLAGS * len(NUMBERS)


@functools.lru_cache(maxsize=None)
def _step_plans(op_count: int) -> st.SearchStrategy[tuple[int, int, int, int]]:
    """(op pick, first operand pick, second operand pick, variant): four plain integers.

    Any combination is a well-formed (maybe skipped) step. The variant packs the param
    choice and whether a number replaces an operand: hypothesis deletes list elements
    of a few choices far more readily than wide ones, and 0 is still the plainest step.
    """
    return st.tuples(st.integers(0, op_count - 1), _PICK, _PICK, st.integers(0, _VARIANTS - 1))


def _make_step(spec: OpSpec, nodes: list[_Node], picks: tuple[int, int], variant: int, numbers: bool,
               broadcasting: bool, index: int) -> tuple[Step, _Node] | None:
    param_pick = variant % _PARAM_PICKS
    # Flags 3 and 4 put a number in slot 0 or 1 (where the table allows one); others none.
    number_slot = (variant // _PARAM_PICKS) % _NUMBER_FLAGS - 3 if numbers else -1
    number = NUMBERS[variant // (_PARAM_PICKS * _NUMBER_FLAGS)]
    floats = [node for node in nodes if node.value.is_floating_point()]
    ints = [node for node in nodes if not node.value.is_floating_point()]
    args: list[_Node | float | int] = []
    for slot, (kind, pick) in enumerate(zip(spec.slots, picks)):
        if kind == INDEX:
            if not ints:
                return None
            args.append(_pick(ints, pick))
        elif slot == number_slot and slot in spec.number_slots:
            args.append(number)
        else:
            # An op that only takes 4-D inputs picks among the 4-D nodes, or it would hardly ever run.
            candidates = [x for x in floats if x.value.dim() == spec.rank] if spec.rank else floats
            if not candidates:
                return None
            args.append(_pick(candidates, pick))
    operands = [a.value if isinstance(a, _Node) else a for a in args]
    return _accept(spec, args, operands, spec.drawn_params(operands[0], param_pick), broadcasting, index)


def _pick(nodes: list[_Node], pick: int) -> _Node:
    """Pick 0 is the first node (x0); pick k >= 1 the k-th most recent, wrapping around.

    Both ends are what minimal witnesses reuse: ``x0 + x0`` is picks (0, 0), and
    ``x2 = x0 + x0; x3 = x2 + x2`` is (0, 0) then (1, 1), whatever the leaf count.
    """
    return nodes[-(pick % len(nodes))]  # -0 is 0


def _accept(spec: OpSpec, args: list[_Node | float | int], operands: list[Any],
            params: dict[str, Any], broadcasting: bool, index: int) -> tuple[Step, _Node] | None:
    """The step and its node when the op may run on these operands here, else None."""
    if check_operands(spec, operands, params) is not None:
        return None
    if not broadcasting and needs_broadcasting(spec, operands):
        return None
    result = spec.apply_torch(operands, params)
    if not bool(torch.isfinite(result).all()) or (result.numel() and float(result.abs().max()) > MAX_MAGNITUDE):
        return None
    if broadcasts_implicitly(spec, operands, params, result):
        return None
    inputs_exact = all(a.exact for a in args if isinstance(a, _Node))
    if not spec.smooth and not inputs_exact and not _off_kinks(spec, operands, params):
        return None
    # Whole numbers stay whole through an op that keeps integers, with no rounding on the way.
    integers_in = all(_integral(x) if isinstance(x, torch.Tensor) else float(x).is_integer() for x in operands)
    exact = inputs_exact and integers_in and spec.keeps_integers and _integral(result)
    name = f"x{index}"
    names = tuple(a.name if isinstance(a, _Node) else a for a in args)
    return Step(name, spec.name, names, tuple(params.items())), _Node(name, result.detach(), exact)


def reaches_output(steps: Sequence[Step], op_name: str) -> bool:
    """Whether a step of ``op_name`` lies on a path to the output (the last step)."""
    if not steps:
        return False
    needed = {steps[-1].name}
    for step in reversed(steps):
        if step.name in needed:
            if step.op == op_name:
                return True
            needed.update(a for a in step.args if isinstance(a, str))
    return False


def _first_valid_step(specs: Sequence[OpSpec], nodes: list[_Node], broadcasting: bool,
                      index: int) -> tuple[Step, _Node] | None:
    # Picks 1, 0, 2, 3, ...: the latest node first, then x0, then the others.
    picks = [1, 0, *range(2, len(nodes))] if len(nodes) > 1 else [0]
    for spec in specs:
        for i in picks:
            for j in picks:
                for variant in range(2):
                    made = _make_step(spec, nodes, (i, j), variant, False, broadcasting, index)
                    if made is not None:
                        return made
    return None


def _sum_step(specs: Sequence[OpSpec], output: _Node, index: int) -> Step | None:
    if "sum" not in {spec.name for spec in specs}:
        return None
    return Step(f"x{index}", "sum", (output.name,))


def _integral(t: torch.Tensor) -> bool:
    return bool((t == t.round()).all())


def broadcasts_implicitly(spec: OpSpec, operands: Sequence[Any], params: dict[str, Any],
                           result: torch.Tensor) -> bool:
    """An op outside the broadcasting follow-up that still stretched its operands
    (torch.maximum does): the contract promises broadcasting only for ``broadcasts`` ops."""
    tensors = [x for x in operands if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if spec.broadcasts or len(tensors) < 2 or len({tuple(t.shape) for t in tensors}) == 1:
        return False
    shape = broadcast_shape(*(t.shape for t in tensors))
    if shape is None or shape != tuple(result.shape):
        return False
    expanded = [x.expand(shape) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in operands]
    try:
        return bool(torch.equal(spec.apply_torch(expanded, params), result))
    except (RuntimeError, ValueError, TypeError):
        return False


def _off_kinks(spec: OpSpec, operands: Sequence[Any], params: dict[str, Any]) -> bool:
    """True when nudging the inputs by a relative ``KINK_NUDGE`` leaves the op's gradient alone.

    A non-smooth op (relu, maximum, max-pool) on rounded values may sit on a kink
    in one engine and next to it in another; such a step proves nothing.
    """
    base = _gradients(spec, operands, params)
    generator = torch.Generator().manual_seed(0)
    for _ in range(2):
        signs = [torch.randint(0, 2, x.shape, generator=generator) * 2 - 1
                 if isinstance(x, torch.Tensor) and x.is_floating_point() else None for x in operands]
        for direction in (1, -1):
            nudged = [x if s is None else x + direction * s * KINK_NUDGE * x.abs().clamp(min=1)
                      for x, s in zip(operands, signs)]
            for g0, g1 in zip(base, _gradients(spec, nudged, params)):
                if not torch.allclose(g0, g1, rtol=1e-5, atol=1e-5):
                    return False
    return True


def _gradients(spec: OpSpec, operands: Sequence[Any], params: dict[str, Any]) -> list[torch.Tensor]:
    inputs = [x.detach().clone().requires_grad_() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in operands]
    leaves = [x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad]
    out = spec.apply_torch(inputs, params)
    # out.sum(), not an output gradient of ones: the same numbers, and torch checks a given output gradient
    # with its symbolic shapes, whose first use imports them (a third of a second of a grade).
    grads = torch.autograd.grad(out.sum(), leaves, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g for x, g in zip(leaves, grads)]


# ---- the ops a graph may use ----------------------------------------------------


_RANKS: Final = (None, 4)
"""What the leaves can feed: 2-D (and, when broadcasting, smaller) tensors, and (N, C, H, W) images."""


def _usable_specs(names: tuple[str, ...]) -> list[OpSpec]:
    specs = [op(name) for name in dict.fromkeys(names)]
    for spec in specs:
        if spec.rank not in _RANKS:
            raise ValueError(f"op {spec.name} declares rank {spec.rank}: random graphs draw 2-D and (N, C, H, W) "
                             "leaves only")
    return specs
