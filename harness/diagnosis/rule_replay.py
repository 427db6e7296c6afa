"""A graph run backward in torch, one op at a time, with one op's rule changed the way candidates get it wrong.

``symptoms`` names a wrong gradient by the *rule mutation* that reproduces it; this module
is the replay: ``forward`` computes every value once, ``backward`` walks the graph in
reverse with torch's rule for every op but the mutated one (its gradient for one operand
sign-flipped, scaled, transposed, without the upstream gradient, at the wrong point, not
reduced after broadcasting, ...), ``matches`` compares the result with the candidate's.
Trusted code only: torch tensors and the values the worker returned.
"""

from __future__ import annotations

from typing import Any, Callable, Final, Sequence

import torch

from harness.compare import as_zero_d, same_values
from harness.ops import OPS, TENSOR
from harness.diagnosis.replay_cache import remembered
from harness.diagnosis.whole_rules import WHOLE_RULE_KINDS, WHOLE_RULES, Unchanged
from harness.program import Outcome, Program, weighted

__all__ = ["Mutation", "mutations", "mutation_detail", "backward", "forward", "first_path", "graded_leaves",
           "matches", "close", "vjp"]

RTOL: Final = 1e-4
ATOL: Final = 1e-6
"""Close enough to be the same gradient: a float32 engine still agrees, a different rule does not."""


Mutation = tuple[str, int, str, Any]
"""(op, operand slot, symptom, parameter: a factor or an axis)."""


def first_path(program: Program, values: dict[str, Any]) -> dict[str, Any]:
    """Leaf gradients of an engine that recurses into each input as soon as it has a gradient and passes a
    node on only once: the first path to reach a shared value is the only one that goes further."""
    steps = {s.name: s for s in program.steps}
    tracked = program.tracked()
    out = values[program.output]
    upstream = torch.ones_like(out) if program.upstream is None else program.upstream.to(torch.float64)
    leaves: dict[str, torch.Tensor] = {}
    done: set[str] = set()

    def visit(name: str, g: torch.Tensor) -> None:
        if name not in steps:
            leaves[name] = g if name not in leaves else leaves[name] + g
            return
        if name in done:
            return
        done.add(name)
        step = steps[name]
        slots = [i for i, a in enumerate(step.args) if isinstance(a, str) and a in tracked]
        local = vjp(step.spec, step.param_dict(), [values[a] if isinstance(a, str) else a for a in step.args], g,
                     slots)
        for i in slots:
            if local[i] is not None:
                visit(step.args[i], local[i])

    visit(program.output, upstream)
    return {leaf.name: leaves.get(leaf.name) for leaf in program.leaves}

def graded_leaves(program: Program, expected: Outcome) -> list[str]:
    return [leaf.name for leaf in program.leaves
            if not leaf.raw and leaf.requires_grad and expected.grads.get(leaf.name) is not None]


def mutations(program: Program) -> list[Mutation]:
    """Every mutation that could change this program's gradients, the simplest explanations first."""
    ops: list[tuple[str, int]] = []
    for step in program.steps:
        for slot, arg in enumerate(step.args):
            if isinstance(arg, str) and OPS[step.op].slots[slot] == TENSOR and (step.op, slot) not in ops:
                ops.append((step.op, slot))
    plain = ["sign", "missing", "upstream", "transposed", "at_input", "at_output", "unreduced", "overwritten",
             "wrong_shape"]
    out: list[Mutation] = [(op, slot, s, None) for s in plain for op, slot in ops]
    out += [(op, slot, "wrong_axis", axis) for op, slot in ops if OPS[op].broadcasts for axis in range(4)]
    out += [(op, slot, "no_keepdim", None) for op, slot in ops if OPS[op].broadcasts]
    out += [(op, slot, "other_guard", None) for op, slot in ops if len(OPS[op].slots) == 2]
    twice = [step.op for step in program.steps if len({a for a in step.args if isinstance(a, str)})
             < len([a for a in step.args if isinstance(a, str)])]
    out += [(op, 0, "once", None) for op in dict.fromkeys(twice)]
    out += [(op, slot, "exponent", shift) for op, slot in ops if op == "pow" for shift in (1, -1)]
    out += [(op, slot, "missing_factor", name) for op, slot in ops for name in _FACTORS.get((op, slot), {})]
    out += [(op, slot, kind, None) for op, slot in ops for kind in WHOLE_RULES.get(op, ())]
    out += [(op, slot, "scaled", None) for op, slot in ops]
    return out


def mutation_detail(mutation: Mutation) -> str:
    if mutation[2] == "missing_factor":
        return mutation[3]
    if mutation[2] == "wrong_axis":
        return f"axis {mutation[3]}"
    if mutation[2] == "exponent":
        return f"x ** {'p' if mutation[3] == 1 else '(p - 2)'} where x ** (p - 1) is right"
    return ""


def backward(program: Program, expected: Outcome | None, mutation: Mutation | None) -> dict[str, Any] | None:
    """Every leaf's gradient when the program's ops follow torch's rules, but for ``mutation``; None when the
    mutated rule cannot run on this graph (shapes that do not fit)."""
    return remembered(program, ("rule", mutation), lambda: _backward(program, mutation))


def _backward(program: Program, mutation: Mutation | None) -> dict[str, Any] | None:
    try:
        with torch.no_grad():
            values = forward(program)
        return _walk(program, values, mutation)
    except (RuntimeError, ValueError, IndexError, TypeError):
        return None


def forward(program: Program) -> dict[str, Any]:
    cache = program.__dict__.get("_symptom_values")
    if cache is None:
        values: dict[str, Any] = {}
        for leaf in program.leaves:
            values[leaf.name] = leaf.value if leaf.raw else leaf.value.detach().to(torch.float64)
        for step in program.steps:
            operands = [values[a] if isinstance(a, str) else a for a in step.args]
            values[step.name] = step.spec.apply_torch(operands, step.param_dict())
        cache = values
        object.__setattr__(program, "_symptom_values", cache)  # a cache beside the fields
    return cache


def _walk(program: Program, values: dict[str, Any], mutation: Mutation | None) -> dict[str, Any]:
    tracked = program.tracked()
    out = values[program.output]
    upstream = torch.ones_like(out) if program.upstream is None else program.upstream.to(torch.float64)
    grads: dict[str, torch.Tensor] = {program.output: upstream}
    for step in reversed(program.steps):
        g = grads.get(step.name)
        if g is None:
            continue
        slots = [i for i, a in enumerate(step.args) if isinstance(a, str) and a in tracked]
        if mutation is not None and mutation[2] == "other_guard" and mutation[0] == step.op:
            slots = _guarded_by_the_other(step, tracked, mutation[1], slots)
        if not slots:
            continue
        local = _local(step, values, g, slots, mutation)
        once = mutation is not None and mutation[2] == "once" and mutation[0] == step.op
        handed: set[str] = set()
        for i in slots:
            d = local[i]
            if d is None:
                continue
            name = step.args[i]
            if once and name in handed:
                continue  # one tensor as both operands: the second contribution is lost
            handed.add(name)
            overwrite = mutation is not None and mutation[2] == "overwritten" and mutation[:2] == (step.op, i)
            grads[name] = d if overwrite or name not in grads else grads[name] + d
    passes = program.passes
    return {leaf.name: (grads[leaf.name] * passes if leaf.name in grads else None) for leaf in program.leaves}


def _guarded_by_the_other(step: Any, tracked: set[str], slot: int, slots: list[int]) -> list[int]:
    """The operands a rule hands gradients to when operand ``slot``'s is decided by the other operand's
    requires_grad (a condition copied from the other branch): a constant gets one, a leaf that needs one
    gets none."""
    other = step.args[1 - slot]
    if not isinstance(step.args[slot], str) or not isinstance(other, str):
        return slots
    keep = [i for i in slots if i != slot]
    return sorted(keep + [slot]) if other in tracked else keep



def _local(step: Any, values: dict[str, Any], g: torch.Tensor, slots: list[int],
           mutation: Mutation | None) -> dict[int, torch.Tensor | None]:
    """The gradient ``step`` hands each operand in ``slots``, mutated where ``mutation`` says.

    Where the mistake makes no difference at this step (an operand nothing broadcast, an upstream gradient
    of ones), the step hands on the right gradient: a graph whose other steps show the mistake is still
    replayed, as an engine with that mistake runs it."""
    try:
        return _mutated_local(step, values, g, slots, mutation)
    except Unchanged:
        return vjp(step.spec, step.param_dict(), [values[a] if isinstance(a, str) else a for a in step.args], g,
                   slots)


def _mutated_local(step: Any, values: dict[str, Any], g: torch.Tensor, slots: list[int],
                   mutation: Mutation | None) -> dict[int, torch.Tensor | None]:
    spec, params = step.spec, step.param_dict()
    operands = [values[a] if isinstance(a, str) else a for a in step.args]
    mutated = mutation is not None and mutation[0] == step.op and mutation[1] in slots
    kind = mutation[2] if mutated else None
    slot = mutation[1] if mutated else None
    out = vjp(spec, params, operands, g, slots)
    if kind is None or kind in ("overwritten", "once", "other_guard"):
        return out
    d, x = out[slot], operands[slot]
    if kind == "factor":
        out[slot] = d * mutation[3]
    elif kind == "sign":
        out[slot] = -d
    elif kind == "missing":
        out[slot] = None
    elif kind == "transposed":
        if d.dim() != 2:
            raise ValueError("no transpose to take")
        if d.shape[0] == d.shape[1] and torch.equal(d, d.T):
            raise Unchanged("a symmetric gradient")
        out[slot] = d.T
    elif kind == "upstream":
        if torch.equal(g, torch.ones_like(g)):
            raise Unchanged("the upstream gradient is all ones here")
        out[slot] = vjp(spec, params, operands, torch.ones_like(g), slots)[slot]
    elif kind in ("at_input", "at_output"):
        out[slot] = g * _derivative_elsewhere(step.op, kind, x, values[step.name], params)
    elif kind == "wrong_shape":
        if tuple(g.shape) == tuple(d.shape):
            raise Unchanged("the result has the operand's shape")
        out[slot] = d.reshape(g.shape) if d.numel() == g.numel() else g
    elif kind == "missing_factor":
        # A number operand (the 3 of 3 / x) is a factor too.
        factor = torch.as_tensor(_FACTORS[(step.op, slot)][mutation[3]](operands, values[step.name]),
                                 dtype=torch.float64)
        if not bool((factor != 0).all()):
            raise ValueError("a zero factor")
        out[slot] = d / factor
    elif kind == "exponent":
        p = params.get("p")
        out[slot] = g * p * x ** (p - 1 + mutation[3])
    elif kind in WHOLE_RULE_KINDS:
        out[slot] = WHOLE_RULE_KINDS[kind](operands, values[step.name], g, params, slot)
    elif kind in ("unreduced", "wrong_axis", "no_keepdim"):
        full = _vjp_unreduced(spec, params, operands, g, slot)
        if full.shape == x.shape:
            raise Unchanged("nothing was broadcast")
        if kind == "unreduced":
            out[slot] = full
        elif kind == "no_keepdim":
            out[slot] = _summed_without_keepdim(full, x.shape)
        else:
            out[slot] = _sum_over_wrong_axis(full, x.shape, mutation[3], d)
    return out


def vjp(spec: Any, params: dict[str, Any], operands: list[Any], g: torch.Tensor,
         slots: Sequence[int]) -> dict[int, torch.Tensor | None]:
    inputs = list(operands)
    if spec.name == "reshape" and 0 in slots and isinstance(operands[0], torch.Tensor) \
            and g.numel() == operands[0].numel() and tuple(g.shape) != tuple(spec.apply_torch(inputs, params).shape):
        # A gradient of the wrong shape from a step replayed wrong (an untransposed .T) goes back through
        # reshape as an engine's rule takes it, g.reshape(input shape), instead of ending the replay.
        return {i: (g.reshape(operands[0].shape) if i == 0 else None) for i in slots}
    for i in slots:
        inputs[i] = operands[i].detach().requires_grad_(True)
    with torch.enable_grad():
        y = spec.apply_torch(inputs, params)
        grads = torch.autograd.grad(weighted(y, g), [inputs[i] for i in slots], allow_unused=True)
    return {i: (d if d is None else d.detach()) for i, d in zip(slots, grads)}


def _vjp_unreduced(spec: Any, params: dict[str, Any], operands: list[Any], g: torch.Tensor,
                   slot: int) -> torch.Tensor:
    """The gradient of operand ``slot`` before it is summed back to its shape: as if it were already broadcast."""
    inputs = list(operands)
    x = operands[slot]
    if not isinstance(x, torch.Tensor):
        raise ValueError("a number operand")
    inputs[slot] = x.detach().expand(g.shape).clone().requires_grad_(True)
    with torch.enable_grad():
        y = spec.apply_torch(inputs, params)
        (d,) = torch.autograd.grad(weighted(y, g), [inputs[slot]])
    return d.detach()


def _summed_without_keepdim(full: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """The broadcast gradient summed back over the stretched axes, the size-1 ones dropped (no keepdim)."""
    lead = full.dim() - len(shape)
    summed = full.sum(dim=tuple(range(lead))) if lead > 0 else full
    axes = tuple(i for i, size in enumerate(shape) if size == 1 and summed.shape[i] != 1)
    if not axes:
        raise Unchanged("no axis of size 1 was stretched")
    return summed.sum(dim=axes)


def _sum_over_wrong_axis(full: torch.Tensor, shape: torch.Size, axis: int, right: torch.Tensor) -> torch.Tensor:
    if axis >= full.dim():
        raise ValueError("no such axis")
    summed = full.sum(dim=axis)
    if summed.numel() != right.numel():
        raise ValueError("the sum does not fit the operand")
    summed = summed.reshape(shape)
    if torch.allclose(summed, right):
        raise Unchanged("that is the right axis")
    return summed


def _left_number(operands: list, y: torch.Tensor) -> float:
    """The number of ``c / x``: a rule of ``__rtruediv__`` alone, which two tensors never reach."""
    if isinstance(operands[0], torch.Tensor):
        raise Unchanged("a tensor on the left: the rule for two tensors")
    return operands[0]


_FACTORS: Final[dict[tuple[str, int], dict[str, Callable[[list, torch.Tensor], torch.Tensor]]]] = {
    ("sigmoid", 0): {"(1 - y)": lambda o, y: 1 - y, "y": lambda o, y: y},
    ("tanh", 0): {"(1 + y)": lambda o, y: 1 + y, "(1 - y)": lambda o, y: 1 - y},
    ("div", 1): {"1/b": lambda o, y: 1 / o[1], "a": lambda o, y: o[0], "c (the number on the left)": _left_number},
    ("div", 0): {"1/b": lambda o, y: 1 / o[1]},
    ("log", 0): {"1/x": lambda o, y: 1 / o[0]},
}
"""The factors of a derivative written as a product (y the op's result): a rule that drops one of them."""

_OUTPUT_FORM: Final[dict[str, Callable[[torch.Tensor], torch.Tensor]]] = {
    "exp": lambda y: y,
    "tanh": lambda y: 1 - y * y,
    "sigmoid": lambda y: y * (1 - y),
}
"""Derivatives written in terms of the op's output."""

_INPUT_FORM: Final[dict[str, Callable[..., torch.Tensor]]] = {
    "log": lambda x: 1 / x,
    "exp": lambda x: x.exp(),
    "tanh": lambda x: 1 - x.tanh() ** 2,
    "sigmoid": lambda x: x.sigmoid() * (1 - x.sigmoid()),
    "pow": lambda x, p: p * x ** (p - 1),
}
"""Derivatives written in terms of the op's input."""


def _derivative_elsewhere(op: str, kind: str, x: torch.Tensor, y: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """The derivative written for the output evaluated at the input (``at_input``), or the reverse."""
    if kind == "at_input" and op in _OUTPUT_FORM:
        return _OUTPUT_FORM[op](x)
    if kind == "at_output" and op in _INPUT_FORM:
        return _INPUT_FORM[op](y, *params.values()) if op == "pow" else _INPUT_FORM[op](y)
    raise ValueError("no such form of this derivative")


# ---- comparing ----------------------------------------------------------------------------------------


def matches(grads: dict[str, Any], got: Any, targets: list[str]) -> bool:
    for name in targets:
        want = grads.get(name)
        have = got.grads.get(name)
        if want is None and (have is None or (isinstance(have, torch.Tensor) and not have.abs().any())):
            continue
        if not isinstance(have, torch.Tensor) or want is None or not close(have, want):
            return False
    return True


def close(got: Any, want: Any) -> bool:
    """``got`` is ``want`` as a check judges it: one element in size-1 axes where ``want`` is 0-d is a convention."""
    if not isinstance(got, torch.Tensor) or not isinstance(want, torch.Tensor):
        return got is None and want is None
    return same_values(as_zero_d(got, want), want, RTOL, ATOL)
