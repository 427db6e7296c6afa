"""Adding an op is the recipe in harness/ops.py's docstring: a missed step fails, naming it.

Every real op has done every step; a made-up op, missing one step after another, gets
each step's message. What an ``OpSpec`` declares about drawing it (its rank, whether it
keeps integers) is held to what its domain rule and torch's forward do.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch

from harness.checks.situations import fixed_operands
from harness.concepts import concepts
from harness.ops import INDEX, OPS, TENSOR, OpSpec, check_operands
from reference import Tensor

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = (ROOT / "candidate_template" / "solution.py").read_text()


def next_step(spec: OpSpec, reference: type = Tensor, template: str = TEMPLATE) -> str | None:
    """What the recipe still needs for ``spec``, as the message a developer reads; None when done."""
    name = spec.name
    for named in (spec.concept, *spec.teaches):
        if named not in concepts():
            return (f"step 1 ({name}): concept {named!r} is unknown to `grade explain`: "
                    "use one of harness/data/concepts.yaml or add it there")
    accepts_2d, accepts_4d = _probe(spec, 2, distinct=True) is not None, _probe(spec, 4, distinct=True) is not None
    if not accepts_2d and not accepts_4d:
        return f"step 1 ({name}): its domain rule refuses 2-D and (N, C, H, W) operands alike"
    rank = None if accepts_2d else 4
    if spec.rank != rank:
        return (f"step 1 ({name}): it takes {'2-D' if accepts_2d else 'only (N, C, H, W)'} operands: "
                f"declare rank={rank}")
    whole = _probe(spec, rank or 2, distinct=False)
    keeps = not spec.transcendental and whole is not None and bool((whole == whole.round()).all())
    if spec.keeps_integers != keeps:
        return (f"step 1 ({name}): whole-number inputs give {'whole numbers' if keeps else 'fractions'}: "
                f"declare keeps_integers={keeps}")
    if fixed_operands(spec) is None:
        return f"step 1 ({name}): no fixed operands lie inside its domain rule, so its op check has no situations"
    if not hasattr(reference, spec.member):
        return (f"step 2 ({name}): write its rule in reference/engine.py: Tensor.{spec.member}, "
                "forward and backward side by side")
    if not re.search(rf"^\s*#?\s*def {re.escape(spec.member)}\(", template, re.M):
        return (f"step 3 ({name}): add its stub to candidate_template/solution.py "
                f"(`def {spec.member}(...)` with the other {spec.level} ops)")
    return None


def _probe(spec: OpSpec, rank: int, distinct: bool) -> torch.Tensor | None:
    """Its torch result on small operands of ``rank`` (distinct values, or ones with a single 2), or None
    when its domain refuses them."""
    shape = (2, 2) if rank == 2 else (1, 1, 2, 2)
    operands: list[Any] = []
    for slot, kind in enumerate(spec.slots):
        if kind == INDEX:
            operands.append(torch.zeros(2, dtype=torch.int64))
        elif distinct:
            operands.append(torch.arange(1.0, 5.0, dtype=torch.float64).reshape(shape) + 0.5 * slot)
        else:
            ones = torch.ones(4, dtype=torch.float64)
            ones[0] = 2.0
            operands.append(ones.reshape(shape) + slot)
    params = spec.drawn_params(operands[0], 0)
    if check_operands(spec, operands, params) is not None:
        return None
    return spec.apply_torch(operands, params)


@pytest.mark.parametrize("spec", list(OPS.values()), ids=list(OPS))
def test_every_op_has_done_every_step(spec):
    assert next_step(spec) is None


def _cube(**changes: Any) -> OpSpec:
    fields = dict(name="cube", level="extensions", slots=(TENSOR,), call=lambda a: a.cube(),
                  torch_fn=lambda a: a * a * a, syntax="{0}.cube()", member="cube")
    return OpSpec(**{**fields, **changes})


class _WithCube(Tensor):
    def cube(self) -> Tensor:
        return self * self * self


def test_a_new_op_is_told_each_missing_step_in_turn():
    assert next_step(_cube(concept="cubes")) == (
        "step 1 (cube): concept 'cubes' is unknown to `grade explain`: use one of harness/data/concepts.yaml or "
        "add it there")
    assert next_step(_cube(teaches=("powers",))).startswith("step 1 (cube): concept 'powers' is unknown")
    assert next_step(_cube()) == (
        "step 2 (cube): write its rule in reference/engine.py: Tensor.cube, forward and backward side by side")
    assert next_step(_cube(), reference=_WithCube) == (
        "step 3 (cube): add its stub to candidate_template/solution.py (`def cube(...)` with the other extensions ops)")
    stub = TEMPLATE + "    # def cube(self) -> Tensor: ...\n"
    assert next_step(_cube(), reference=_WithCube, template=stub) is None


def test_what_an_op_declares_for_random_graphs_is_held_to_its_domain_and_forward():
    halve = _cube(torch_fn=lambda a: a * 0.5)
    assert next_step(halve) == (
        "step 1 (cube): whole-number inputs give fractions: declare keeps_integers=False")
    pool = OPS["avg_pool2d"]
    assert next_step(_cube(torch_fn=pool.torch_fn, domain=pool.domain, params=("k",),
                           param_drawers=pool.param_drawers, keeps_integers=False)) == (
        "step 1 (cube): it takes only (N, C, H, W) operands: declare rank=4")
    assert next_step(_cube(rank=4)) == "step 1 (cube): it takes 2-D operands: declare rank=None"


def test_a_param_with_no_default_and_no_drawer_is_refused_at_once():
    # Random graphs could not draw the op: it would silently drop out of every random search.
    with pytest.raises(ValueError) as refused:
        _cube(torch_fn=lambda a, n: a ** n, params=("n",))
    assert str(refused.value) == (
        "op cube: param 'n' has neither a default nor a drawer, so random graphs cannot use the op: give OpSpec "
        "param_drawers={'n': ...} (step 1 of adding an op, harness/ops.py)")
    assert _cube(torch_fn=lambda a, n: a ** n, params=("n",), defaults={"n": 3}).drawn_params(None, 0) == {}


@pytest.mark.parametrize("changes, message", [
    ({"level": "basics"}, "op cube: unknown level 'basics'; one of core, followups, extensions"),
    ({"param_drawers": {"n": lambda x, pick: 3}}, "op cube: a drawer for 'n', which is not one of its params"),
    ({"transcendental": True}, "op cube: a transcendental op cannot keep integers: keeps_integers=False"),
])
def test_an_op_spec_that_contradicts_itself_is_refused(changes, message):
    with pytest.raises(ValueError) as refused:
        _cube(**changes)
    assert str(refused.value) == message
