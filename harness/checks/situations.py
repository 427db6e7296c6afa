"""The fixed programs a property check runs before its random search, one per situation it must cover.

Every seed sees each of them: the core situations (a reused leaf, a diamond, a non-square
product, relu at zero, ...), the broadcast ones (a row, a column, a 0-d tensor, ...) and,
for each extension op, the op on leaves, its result weighted, used twice, and its input
used outside it. Values are fixed, inside each op's domain.
"""

from __future__ import annotations

import functools
import itertools
import math
from typing import Any, Sequence

import torch

from harness.checks.builders import program, tensor
from harness.checks.strategies import IMAGE_HW, broadcasts_implicitly
from harness.ops import INDEX, OpSpec, check_operands, needs_broadcasting, op
from harness.program import Leaf, Program, Step

__all__ = ["Situations", "CORE_SITUATIONS", "BROADCAST_SITUATIONS", "situations_for", "op_situations", "fixed_operands"]

Situations = Sequence[tuple[str, Program]]
"""(situation, program): a fixed example a property check runs before its random search."""


def _program(leaves: dict[str, tuple[list, bool]], steps: list[tuple[str, str, tuple]]) -> Program:
    """``builders.program`` with each leaf given as nested lists of float64 values."""
    return program({n: (tensor(v), rg) for n, (v, rg) in leaves.items()}, steps)


_M = [[1.0, -2.0], [3.0, 1.0]]  # square, not symmetric: a flipped transpose shows
_R = [[1.0, -2.0, 3.0], [2.0, 0.0, -1.0]]  # a zero and negatives in front of relu
_R2 = [[2.0, 1.0, -1.0], [-3.0, 2.0, 1.0]]
_S = [[2.0, 1.0], [-1.0, 3.0], [0.0, -2.0]]

CORE_SITUATIONS: Situations = (
    ("a leaf used twice by one op", _program({"x0": (_M, True)}, [
        ("x1", "add", ("x0", "x0")), ("x2", "sum", ("x1",))])),
    ("a leaf used by two ops", _program({"x0": (_R, True), "x1": (_R2, True)}, [
        ("x2", "mul", ("x0", "x1")), ("x3", "add", ("x2", "x0")), ("x4", "sum", ("x3",))])),
    ("a shared intermediate (a diamond)", _program({"x0": (_M, True)}, [
        ("x1", "add", ("x0", "x0")), ("x2", "add", ("x1", "x1")), ("x3", "sum", ("x2",))])),
    ("paths of different lengths to one node", _program({"x0": (_M, True)}, [
        ("x1", "mul", ("x0", "x0")), ("x2", "mul", ("x1", "x0")), ("x3", "add", ("x1", "x2")),
        ("x4", "add", ("x3", "x0")), ("x5", "sum", ("x4",))])),
    ("a non-square matmul", _program({"x0": (_R, True), "x1": (_S, True)}, [
        ("x2", "matmul", ("x0", "x1")), ("x3", "sum", ("x2",))])),
    ("a square non-symmetric matrix times itself", _program({"x0": (_M, True)}, [
        ("x1", "matmul", ("x0", "x0")), ("x2", "sum", ("x1",))])),
    ("relu at zero and below", _program({"x0": (_R, True), "x1": (_R2, True)}, [
        ("x2", "relu", ("x0",)), ("x3", "mul", ("x2", "x1")), ("x4", "sum", ("x3",))])),
    ("a leaf that does not require grad", _program({"x0": (_R, True), "x1": (_R2, False)}, [
        ("x2", "mul", ("x0", "x1")), ("x3", "sum", ("x2",))])),
    ("sum of a matrix", _program({"x0": (_R, True)}, [("x1", "sum", ("x0",))])),
)
"""What ``core.properties`` covers before its random search, with integer values."""

BROADCAST_SITUATIONS: Situations = (
    ("a row broadcast over the leading axis", _program({"x0": (_R, True), "x1": ([0.5, -1.0, 2.0], True)}, [
        ("x2", "add", ("x0", "x1")), ("x3", "mul", ("x2", "x0")), ("x4", "sum", ("x3",))])),
    ("a column broadcast over a size-1 axis", _program({"x0": (_R, True), "x1": ([[2.0], [-1.0]], True)}, [
        ("x2", "mul", ("x0", "x1")), ("x3", "mul", ("x2", "x0")), ("x4", "sum", ("x3",))])),
    ("a (1, m) row", _program({"x0": (_R, True), "x1": ([[1.0, -1.0, 3.0]], True)}, [
        ("x2", "add", ("x0", "x1")), ("x3", "mul", ("x2", "x0")), ("x4", "sum", ("x3",))])),
    ("a 0-d tensor", _program({"x0": (_R, True), "x1": (1.5, True)}, [
        ("x2", "mul", ("x1", "x0")), ("x3", "mul", ("x2", "x0")), ("x4", "sum", ("x3",))])),
    ("both operands broadcast", _program({"x0": ([[2.0], [-1.0]], True), "x1": ([[1.0, -1.0, 3.0]], True)}, [
        ("x2", "add", ("x0", "x1")), ("x3", "mul", ("x2", "x1")), ("x4", "sum", ("x3",))])),
    ("a broadcast operand used twice", _program({"x0": (_R, True), "x1": ([0.5, -1.0, 2.0], True)}, [
        ("x2", "add", ("x0", "x1")), ("x3", "mul", ("x2", "x1")), ("x4", "sum", ("x3",))])),
)
"""What ``followups.properties`` covers before its random search."""


def situations_for(ops: Sequence[str]) -> list[tuple[str, Program]]:
    """The fixed programs around each op of ``ops`` (see ``op_situations``), named by op."""
    return [(f"{name}: {situation}", program) for name in ops for situation, program in op_situations(name)]



# ---- around one op: every op check's, and the extension property check's -------


@functools.lru_cache(maxsize=None)  # fixed values: the same programs for every grade
def op_situations(name: str) -> tuple[tuple[str, Program], ...]:
    """Small fixed programs around op ``name``, each named by the situation it covers.

    The op on leaves, its result weighted (an upstream gradient that is not all ones,
    every value used once), its result used twice (the same, through reuse), and its
    first input also used outside it (a contribution to add up). The
    leaves are fixed values inside the op's domain, so a property check can run
    these before any random search: every op check sees each situation at any seed.
    """
    spec = op(name)
    made = fixed_operands(spec)
    if made is None:
        return ()
    operands, params = made
    leaves, names = [], []
    for i, value in enumerate(operands):
        if isinstance(value, torch.Tensor):
            leaves.append(Leaf(f"x{i}", value, value.is_floating_point()))
            names.append(f"x{i}")
        else:
            names.append(value)
    z = Step("z", name, tuple(names), tuple(params.items()))
    first = next(n for n, v in zip(names, operands) if isinstance(v, torch.Tensor) and v.is_floating_point())
    out = spec.apply_torch(operands, params)
    # A weight of distinct values other than 1: an upstream gradient that is not all ones, with every value used once.
    weight = Leaf("v", (torch.arange(out.numel(), dtype=torch.float64) * 0.5 - 1.25).reshape(out.shape)
                  + (out.numel() == 1) * 3.0, True)
    built = [
        ("the op on leaves", [z, Step("y", "sum", ("z",))]),
        ("its result weighted", [z, Step("w", "mul", ("z", "v")), Step("y", "sum", ("w",))]),
        ("its result used twice", [z, Step("w", "mul", ("z", "z")), Step("y", "sum", ("w",))]),
        ("its input also used outside it", [z, Step("s", "sum", ("z",)), Step("t", "sum", (first,)),
                                            Step("y", "mul", ("s", "t"))]),
    ]
    return tuple((situation, Program(tuple(leaves) + ((weight,) if any(s.name == "w" and "v" in s.args for s in steps)
                                                      else ()), tuple(steps), "y"))
                 for situation, steps in built)


def _fixed_leaves(n: int = 2, m: int = 3) -> list[torch.Tensor]:
    """Deterministic leaf values: mixed-sign and positive, distinct, no zeros, in the shapes ops need."""
    out = []
    for shape in [(n, m), (m, n), (n, n), (m, m), (n, m, *IMAGE_HW), (n, m, 2, 2)]:
        size = math.prod(shape)
        steps = torch.arange(size, dtype=torch.float64)
        out.append(((steps - size // 2) * 0.75 + 0.25).reshape(shape))   # mixed signs, never 0
        out.append(((steps + 1) * 0.5).reshape(shape))                   # positive
    return out


def fixed_operands(spec: OpSpec) -> tuple[list[Any], dict[str, Any]] | None:
    """The first valid operands for ``spec`` among the fixed leaves (and int64 ids for index slots)."""
    pool = _fixed_leaves()
    ids = torch.tensor([2, 0], dtype=torch.int64)
    choices = [[ids] if kind == INDEX else pool for kind in spec.slots]
    # Distinct operands first: x0 * x1 with x0 == x1 would hide a swapped operand.
    combos = sorted(itertools.product(*choices), key=lambda c: len({id(x) for x in c}) < len(c))
    for combo in combos:
        operands = list(combo)
        params = spec.drawn_params(operands[0], 0)
        if check_operands(spec, operands, params) is not None:
            continue
        if needs_broadcasting(spec, operands):
            continue
        result = spec.apply_torch(operands, params)
        if bool(torch.isfinite(result).all()) and not broadcasts_implicitly(spec, operands, params, result):
            return operands, params
    return None
