"""Naming a wrong gradient no catalogued bug explains: which op, which operand, and how it is wrong.

A failing graph whose forward values are right but whose gradients are not is
explained here by a *rule mutation*: the gradient one op hands one of its operands,
changed in one of the ways candidates get it wrong (the sign flipped, scaled by a
constant, transposed, the upstream gradient dropped, the derivative taken at the
input instead of the output or the reverse, a broadcast not reduced or reduced over
the wrong axis, only the last contribution kept). The graph is run backward in
torch, one op at a time, with each candidate mutation in turn (``rule_replay``); the
first that reproduces every gradient the candidate returned names the op, the operand
and the symptom. A constant factor is measured, not guessed: the gradients are affine in it.

Everything runs in the grader's own process on torch tensors and the values the
worker returned; no candidate code runs here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Final, Sequence

import torch

from harness.compare import as_zero_d
from harness.diagnosis.symptom_texts import SYMPTOMS
from harness.diagnosis.rule_replay import (backward, close, first_path, forward, graded_leaves, matches, mutation_detail,
                                           mutations)
from harness.ops import OPS
from harness.program import Outcome, Program, Step

__all__ = ["ENGINE", "Finding", "SYMPTOMS", "Refuter", "localise", "cover", "contradicted", "operand_name", "describe", "where_it_differs"]

CONTRADICTING: Final = 25
"""Passing graphs (per op) a finding is checked against: enough to refute a wrong one, bounded in time."""

ENGINE: Final = "*"
"""The op of a finding about the engine itself rather than one op's rule."""

MAX_STEPS: Final = 12
"""Larger graphs (the timing probes, unshrunk searches) are not localised: the cost of trying every mutation
grows with the ops of the graph, and a shrunk failing graph is smaller than this."""

REPLAY_STEPS: Final = 500
"""Larger graphs are not replayed to test one finding: one replay costs a vector-Jacobian product per op."""


@dataclass(frozen=True)
class Finding:
    """Which op's rule is wrong, for which operand (its slot; None for the op as a whole), and how."""

    op: str
    operand: int | None
    symptom: str
    detail: str = ""
    param: Any = field(default=None, compare=False)
    """The measured factor or the axis: what replays the finding on another graph."""

    @property
    def key(self) -> tuple[str, int | None, str, str]:
        return self.op, self.operand, self.symptom, self.detail


def operand_name(op: str, operand: int | None) -> str:
    return "abcd"[operand] if operand is not None else "its result"


def describe(finding: Finding, params: dict[str, Any] | None = None) -> tuple[str, str, str]:
    """(name, hint, concept) of a finding: ``a - b``: the gradient of ``b`` has the wrong sign."""
    spec = OPS.get(finding.op)
    symptom = SYMPTOMS[finding.symptom]
    if finding.op == ENGINE:
        said = symptom.says.format(b="", detail=finding.detail)
        return said[0].upper() + said[1:], symptom.hint, symptom.concept or "ops"
    names = [operand_name(finding.op, i) for i in range(len(spec.slots))] if spec else []
    if finding.symptom == "once":
        names = ["x"] * len(names)
    syntax = spec.render(names, params) if spec else finding.op
    operand = operand_name(finding.op, finding.operand)
    said = symptom.says.format(b=f"`{operand}`", detail=finding.detail)
    hint = symptom.hint.format(b=f"`{operand}`", detail=finding.detail)
    concept = symptom.concept or (spec.concept if spec else "ops")
    return f"`{syntax}`: {said}", hint, concept


def contradicted(finding: Finding, program: Program, expected: Outcome) -> bool:
    """Whether an engine with this wrong rule would get ``program`` wrong (so one that passes it lacks the rule)."""
    if finding.symptom == "first_path" and len(program.steps) <= REPLAY_STEPS:
        try:
            grads = first_path(program, forward(program))
        except (RuntimeError, ValueError, IndexError, TypeError):
            return False
        return any(not close(grads.get(n), expected.grads[n]) for n in graded_leaves(program, expected))
    if finding.symptom == "raises_without_grad":
        return _constant_operand(program, expected, finding.op, finding.operand) is not None
    if finding.operand is None or finding.op not in program.ops_used() or len(program.steps) > REPLAY_STEPS:
        return False
    kind = {"doubled": "factor", "scaled": "factor"}.get(finding.symptom, finding.symptom)
    if kind == "dtype":
        return False
    param = finding.param
    if kind == "per_element":
        step = next(s for s in program.steps if s.op == finding.op)
        if not isinstance(step.args[finding.operand], str):
            return False
        values = forward(program)
        name, power = finding.param
        kind, param = "factor", _SIZES[name](values[step.args[finding.operand]], values[step.name]) ** power
    grads = backward(program, expected, (finding.op, finding.operand, kind, param))
    if grads is None:
        return False
    targets = graded_leaves(program, expected)
    return any(not close(grads.get(n), expected.grads[n]) for n in targets)


class Refuter:
    """Whether a finding is contradicted by a passing graph (its wrong rule would fail it); cached per finding."""

    def __init__(self, passed: Sequence[tuple[Program, Outcome]]) -> None:
        self.passed = passed
        self.cache: dict[tuple, bool] = {}

    def __call__(self, finding: Finding) -> bool:
        if finding.key not in self.cache:
            relevant = [(p, e) for p, e in self.passed if finding.op in p.ops_used()][:CONTRADICTING]
            self.cache[finding.key] = any(contradicted(finding, p, e) for p, e in relevant)
        return self.cache[finding.key]


_COMPOSITIONS: Final[dict[str, Callable[[Any], list[Step]]]] = {
    # a / b as a * b ** -1; a - b as a + (-b): how engines commonly build these from their primitives
    "div": lambda s: [Step(f"{s.name}__r", "pow", (s.args[1],), (("p", -1),)),
                      Step(s.name, "mul", (s.args[0], f"{s.name}__r"))],
    "sub": lambda s: [Step(f"{s.name}__n", "neg", (s.args[1],)), Step(s.name, "add", (s.args[0], f"{s.name}__n"))],
}


def explains_composed(finding: Finding, program: Program, got: Any, expected: Outcome) -> bool:
    """Whether ``finding``'s wrong rule reproduces ``got`` once the composite ops of ``program`` are written
    with the primitive the finding is about."""
    if finding.operand is None or got is None or got.error is not None or len(program.steps) > MAX_STEPS:
        return False
    steps: list[Step] = []
    for step in program.steps:
        compose = _COMPOSITIONS.get(step.op)
        usable = compose is not None and isinstance(step.args[1], str)
        steps += compose(step) if usable else [step]
    if len(steps) == len(program.steps) or finding.op not in {s.op for s in steps}:
        return False
    rewritten = Program(program.leaves, tuple(steps), program.output, program.upstream, program.passes)
    kind = {"doubled": "factor", "scaled": "factor"}.get(finding.symptom, finding.symptom)
    if kind in ("per_element", "dtype", "first_path", "raises_without_grad"):
        return False
    grads = backward(rewritten, None, (finding.op, finding.operand, kind, finding.param))
    return grads is not None and matches(grads, got, _observed_leaves(program, got, expected))


def cover(found: dict[str, list[Finding]]) -> dict[tuple, tuple[Finding, list[str]]]:
    """Greedy cover: the finding that explains the most checks takes them, then the next (ties: simplest)."""
    left = {check: list(findings) for check, findings in found.items() if findings}
    out: dict[tuple, tuple[Finding, list[str]]] = {}
    while left:
        counts: dict[tuple, list[str]] = {}
        first: dict[tuple, tuple[int, Finding]] = {}
        for check, findings in left.items():
            for rank, f in enumerate(findings):
                counts.setdefault(f.key, []).append(check)
                first[f.key] = min(first.get(f.key, (rank, f)), (rank, f), key=lambda x: x[0])
        key = max(counts, key=lambda k: (len(counts[k]), -first[k][0]))
        out[key] = (first[key][1], counts[key])
        for check in counts[key]:
            del left[check]
    return out


def localise(program: Program, got: Any, expected: Outcome) -> list[Finding]:
    """Every rule mutation that reproduces the candidate's outcome on ``program``, simplest first.

    ``got`` is the candidate's observation (values, grads, error, dtypes). Several findings can explain one graph equally (the sign of
    either of two chained ops); the diagnosis keeps the one that explains the most failures.
    """
    if got is None or expected is None or len(program.steps) > MAX_STEPS:
        return []
    if got.error is not None:
        return [f for f in [_raised_in_forward(program, got) or _raised_without_grad(program, got, expected)]
                if f is not None]
    if not all(got.leaf_data_unchanged.values()):
        return []  # an input written in place: every later value is off, and no op's rule is to blame
    for step in program.steps:
        if step.name in got.values and not close(got.values[step.name], expected.values[step.name]):
            if _right_on_its_operands(step, got, expected):
                return []  # the op computed its result right from operands something else changed
            swapped = _swapped(program, step, got) or _known_wrong_forward(program, step, got)
            return [swapped or Finding(step.op, None, "wrong_value",
                                       where_it_differs(got.values[step.name], expected.values[step.name]))]
    targets = _observed_leaves(program, got, expected)
    if all(close(got.grads.get(n), expected.grads[n]) for n in targets):
        # The gradients are right: what failed is a flag, a gradient where none belongs, or a dtype.
        for step in program.steps:
            flag = got.requires_grad.get(step.name)
            if flag is not None and flag != expected.requires_grad.get(step.name):
                return [Finding(ENGINE, None, "requires_grad_flag")]
        for leaf in program.leaves:
            if not leaf.raw and not leaf.requires_grad and isinstance(got.grads.get(leaf.name), torch.Tensor):
                return [Finding(ENGINE, None, "grad_not_none")]
        return [f for f in [_dtype(program, got, targets)] if f is not None]
    found: list[Finding] = []
    for mutation in mutations(program):
        op, slot, symptom, _ = mutation
        if symptom == "scaled":
            finding = _scaled(program, got, targets, op, slot)
        else:
            grads = backward(program, expected, mutation)
            finding = None
            if grads is not None and matches(grads, got, targets):
                finding = Finding(op, slot, symptom, mutation_detail(mutation), mutation[3])
        if finding is not None and finding not in found:
            found.append(finding)
    if _all_zero(got, targets, expected):
        # Last, so that a single op's missing gradient is named first when it explains the same graphs.
        found.append(Finding(ENGINE, None, "all_zero"))
    # Last: the engine-wide explanation, for when every rule mutation above is contradicted elsewhere.
    try:
        first = first_path(program, forward(program))
    except (RuntimeError, ValueError, IndexError, TypeError):
        first = None
    if first is not None and matches(first, got, targets):
        found.append(Finding(ENGINE, None, "first_path"))
    return found



def _swapped(program: Program, step: Step, got: Any) -> Finding | None:
    """A binary op that computed ``b op a`` for ``a op b`` (``1 - x`` as ``x - 1``): named by the operand order."""
    if len(step.args) != 2 or step.op not in ("sub", "div", "pow") or len(step.spec.slots) != 2:
        return None
    try:
        values = forward(program)
        operands = [values[a] if isinstance(a, str) else a for a in step.args]
        flipped = step.spec.apply_torch(operands[::-1], step.param_dict())
    except (RuntimeError, ValueError, IndexError, TypeError):
        return None
    if not close(got.values[step.name], flipped):
        return None
    shown = [a if isinstance(a, str) else f"{a:g}" if isinstance(a, float) else repr(a) for a in step.args]
    slot = next((i for i, a in enumerate(step.args) if not isinstance(a, str)), 0)
    return Finding(step.op, slot, "swapped",
                   f"`{step.spec.render(shown)}` as `{step.spec.render(shown[::-1])}`")


_WRONG_FORWARDS: Final[dict[str, dict[str, Callable[..., torch.Tensor]]]] = {
    "batch_norm": {
        "unbiased": lambda x, eps: (x - x.mean(dim=0)) / torch.sqrt(x.var(dim=0, unbiased=True) + eps),
    },
    "sigmoid": {
        "overflow": lambda x: x.exp() / (1 + x.exp()),
    },
}
"""Forward formulas candidates write wrong, per op: each computes the value that mistake gives."""


def _known_wrong_forward(program: Program, step: Step, got: Any) -> Finding | None:
    """A step whose value is what a known wrong formula computes from the same operands."""
    variants = _WRONG_FORWARDS.get(step.op)
    if not variants:
        return None
    try:
        values = forward(program)
        operands = [values[a] if isinstance(a, str) else a for a in step.args]
        for name, formula in variants.items():
            if close(got.values[step.name], formula(*operands, **{**step.spec.defaults, **step.param_dict()})):
                return Finding(step.op, None, f"forward_{name}")
    except (RuntimeError, ValueError, IndexError, TypeError):
        return None
    return None


def _right_on_its_operands(step: Step, got: Any, expected: Outcome) -> bool:
    operands = []
    for arg in step.args:
        if not isinstance(arg, str):
            operands.append(arg)
        elif arg in got.values:
            if not isinstance(got.values[arg], torch.Tensor):
                return False
            operands.append(as_zero_d(got.values[arg], expected.values.get(arg)))
        elif arg in expected.values:
            operands.append(expected.values[arg])
        else:
            return False  # a leaf: its value is the program's own
    try:
        value = step.spec.apply_torch(operands, step.param_dict())
    except (RuntimeError, ValueError, IndexError, TypeError):
        return False
    return close(got.values[step.name], value)


def _observed_leaves(program: Program, got: Any, expected: Outcome) -> list[str]:
    """The leaves whose gradient torch has and the candidate's run reported (a probe may report only some)."""
    return [name for name in graded_leaves(program, expected) if name in got.grads]


def _raised_without_grad(program: Program, got: Any, expected: Outcome) -> Finding | None:
    """An exception about a None in the backward rule of a node with an operand that does not require grad:
    the rule adds to that operand's .grad, which is None."""
    error = got.error
    if error.get("where") != "backward" or "NoneType" not in str(error.get("message", "")):
        return None
    name = str(error.get("node", "")).split(" = ", 1)[0]
    step = next((s for s in program.steps if s.name == name), None)
    if step is None:
        return None
    slot = _constant_operand(program, expected, step.op, None, only=step)
    return None if slot is None else Finding(step.op, slot, "raises_without_grad", str(error.get("type", "")))


def _constant_operand(program: Program, expected: Outcome, op: str, slot: int | None,
                      only: Step | None = None) -> int | None:
    """The slot (``slot`` itself, or the first) of a live step of ``op`` whose operand there does not require grad
    while its result does: its backward rule runs with that operand's .grad None."""
    requires = {leaf.name: leaf.requires_grad for leaf in program.leaves if not leaf.raw}
    requires.update({s.name: bool(expected.requires_grad.get(s.name)) for s in program.steps})
    for step in program.live().steps:
        if step.op != op or (only is not None and step.name != only.name) or not requires.get(step.name):
            continue
        for i, arg in enumerate(step.args):
            if (slot is None or i == slot) and isinstance(arg, str) and arg in requires and not requires[arg]:
                return i
    return None


def _raised_in_forward(program: Program, got: Any) -> Finding | None:
    where = str(got.error.get("where", ""))
    if where.startswith("forward: "):
        name = where.removeprefix("forward: ")
        step = next((s for s in program.steps if s.name == name), None)
        return None if step is None else Finding(step.op, None, "raises", str(got.error.get("type", "")))
    return None


def _all_zero(got: Any, targets: list[str], expected: Outcome) -> bool:
    """Every gradient the candidate returned is zeros where some right one is not."""
    grads = [got.grads.get(n) for n in targets]
    return (bool(grads) and all(isinstance(g, torch.Tensor) and not bool(g.any()) for g in grads)
            and any(bool(expected.grads[n].any()) for n in targets))


def _dtype(program: Program, got: Any, targets: list[str]) -> Finding | None:
    """Right values in the wrong dtype: charged to the op nearest the leaf."""
    for name in targets:
        grad_dtype, data_dtype = got.dtype("grads", name), got.dtype("leaf_data", name)
        # Only a gradient that loses values fails a check (another float dtype is a convention).
        if grad_dtype and data_dtype and grad_dtype != data_dtype and not grad_dtype.startswith(("float", "bfloat")):
            step = next((s for s in program.steps if name in s.args), None)
            if step is not None:
                return Finding(step.op, step.args.index(name), "dtype", grad_dtype)
    return None


def _scaled(program: Program, got: Any, targets: list[str], op: str, slot: int) -> Finding | None:
    """The factor c that makes the candidate's gradients, when one exists: they are affine in c."""
    g0 = backward(program, None, (op, slot, "factor", 0.0))
    g1 = backward(program, None, (op, slot, "factor", 1.0))
    if g0 is None or g1 is None:
        return None
    base, slope, seen = [], [], []
    for name in targets:
        have = got.grads.get(name)
        if not isinstance(have, torch.Tensor) or g0[name] is None or g1[name] is None:
            return None
        if tuple(have.shape) != tuple(g1[name].shape):
            return None
        base.append(g0[name].reshape(-1))
        slope.append((g1[name] - g0[name]).reshape(-1))
        seen.append(have.to(torch.float64).reshape(-1))
    b, s, y = torch.cat(base), torch.cat(slope), torch.cat(seen)
    if not torch.isfinite(y).all() or s.numel() == 0 or float(s.abs().max()) == 0.0:
        return None
    c = float(((y - b) * s).sum() / (s * s).sum())
    if abs(c - 1.0) < 1e-6:
        return None
    grads = backward(program, None, (op, slot, "factor", c))
    if grads is None or not matches(grads, got, targets):
        return None
    per = _per_element(program, op, slot, c)
    if per is not None:
        return per
    if abs(c + 1.0) < 1e-3:
        return Finding(op, slot, "sign")
    if abs(c) < 1e-6:
        return Finding(op, slot, "missing")
    if abs(c - 2.0) < 1e-3:
        return Finding(op, slot, "doubled", param=2.0)
    return Finding(op, slot, "scaled", _factor(c), c)


_SIZES: Final[dict[str, Callable[[torch.Tensor, torch.Tensor], float]]] = {
    "n": lambda x, y: float(x.numel()),
    "the batch size": lambda x, y: float(x.shape[0]) if x.dim() else 1.0,
    "the window size": lambda x, y: float(x.numel() / max(1, y.numel())),
}
"""Sizes a reduction's gradient divides by: a factor equal to one of them (or its inverse) is a missed division."""


def _per_element(program: Program, op: str, slot: int, c: float) -> Finding | None:
    """A factor equal to the size the op averages over (or its inverse), on the first step of ``op``."""
    step = next(s for s in program.steps if s.op == op)
    values = forward(program)
    x, y = values[step.args[slot]], values[step.name]
    for name, size in _SIZES.items():
        n = size(x, y)
        if n > 1:
            for power in (1, -1):
                if abs(c - n ** power) < 1e-6 * max(1.0, n):
                    return Finding(op, slot, "per_element", name if power == 1 else f"1/{name}", (name, power))
    return None


def _factor(c: float) -> str:
    for q in range(1, 65):
        p = round(c * q)
        if p and abs(c - p / q) < 1e-4 * max(1.0, abs(c)):
            return f"{p}/{q}" if q > 1 else f"{p}"
    return f"{c:.4g}"


def where_it_differs(got: Any, want: Any) -> str:
    """Where a wrong gradient differs from torch's, for a title that names no rule: how many elements, and the
    worst of them."""
    if not isinstance(got, torch.Tensor) or not isinstance(want, torch.Tensor) or want.numel() == 0:
        return ""
    got = as_zero_d(got, want)  # one element in size-1 axes where torch's is 0-d is a convention, not the difference
    if tuple(got.shape) != tuple(want.shape):
        return f": shape {tuple(got.shape)} where torch's is {tuple(want.shape)}"
    err = (got.double() - want.double()).abs()
    bad = (err > 1e-6 * (1 + want.double().abs())) | torch.isnan(err)  # a nan compares false with anything
    worst = int(torch.argmax(torch.where(torch.isnan(err), torch.full_like(err, float("inf")), err).reshape(-1)))
    index = [int(i) for i in torch.unravel_index(torch.tensor(worst), tuple(want.shape))] if want.dim() else []
    if want.numel() == 1:
        return f": got {float(got.reshape(-1)[0]):.4g}, torch {float(want.reshape(-1)[0]):.4g}"
    at = f" at {index}" if index else ""
    return (f": {int(bad.sum())} of {want.numel()} elements differ, the worst{at} "
            f"(got {float(got.reshape(-1)[worst]):.4g}, torch {float(want.reshape(-1)[worst]):.4g})")
