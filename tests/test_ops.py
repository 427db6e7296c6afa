"""The op table: each op of ``harness.ops.OPS`` on its own.

For every op the reference engine (through the op's ``call``) must agree with
the op's ``torch_fn`` under torch autograd in float64, ``check_operands`` must
reject invalid operands with a message, and the reference class must have the
op's member. Parametrized over the table, never over a hand-kept list.
"""

from __future__ import annotations

import functools
import math

import pytest
import torch
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from harness.compare import DEFAULT_TOLERANCE, compare
from harness.ops import INDEX, OPS, TENSOR, OpSpec, check_operands
from harness.program import Program, Step
from harness.checks.situations import op_situations
from harness.checks.strategies import op_graphs, reaches_output
from reference import Tensor

SPECS = list(OPS.values())
SPEC_IDS = [spec.name for spec in SPECS]


def _operands(program: Program, step: Step) -> list:
    """The step's operands as torch values: leaves, earlier steps' oracle values, numbers."""
    values = {leaf.name: leaf.value for leaf in program.leaves}
    values.update(program.run_torch().values)
    return [values[a] if isinstance(a, str) else a for a in step.args]


def valid_example(name: str) -> tuple[list, dict]:
    """Valid operands and params for op ``name``: fresh copies, so a test may spoil them."""
    operands, params = _first_example(name)
    return list(operands), dict(params)


@functools.cache
def _first_example(name: str) -> tuple[tuple, tuple]:
    program = find(
        op_graphs(ops=[name], max_steps=1),
        lambda p: name in p.ops_used(),
        settings=settings(database=None, derandomize=True, phases=[Phase.generate],
                          suppress_health_check=list(HealthCheck)),
    )
    step = next(s for s in program.steps if s.op == name)
    return tuple(_operands(program, step)), step.params


def _is_float_tensor(x: object) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def assert_op_matches_torch(spec: OpSpec, operands: list, params: dict, upstream_seed: int) -> None:
    ours = [Tensor(x.clone(), requires_grad=True) if _is_float_tensor(x) else x for x in operands]
    theirs = [x.clone().requires_grad_() if _is_float_tensor(x) else x for x in operands]
    got = spec.apply_candidate(ours, params)
    expected = spec.apply_torch(theirs, params)
    what = spec.render([f"x{i}" for i in range(len(operands))], params)
    assert got.requires_grad, f"{what} should require grad"
    mismatch = compare(got.data, expected.detach(), DEFAULT_TOLERANCE, f"{what} value")
    assert mismatch is None, mismatch.message
    # A random upstream gradient: a rule that ignores it must fail.
    gen = torch.Generator().manual_seed(upstream_seed)
    upstream = torch.randint(-3, 4, expected.shape, generator=gen).to(torch.float64)
    got.backward(upstream)
    expected.backward(upstream)
    for i, (mine, oracle) in enumerate(zip(ours, theirs)):
        if isinstance(mine, Tensor):
            mismatch = compare(mine.grad, oracle.grad, DEFAULT_TOLERANCE, f"grad of operand {i + 1} of {what}")
            assert mismatch is None, mismatch.message


# ---- value and gradient against torch -----------------------------------------------


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
@settings(max_examples=25)
@given(data=st.data(), integer_values=st.booleans())
def test_op_matches_torch_autograd(spec: OpSpec, data: st.DataObject, integer_values: bool) -> None:
    program = data.draw(op_graphs(ops=[spec.name], max_steps=2, integer_values=integer_values,
                                  numbers=bool(spec.number_slots), broadcasting=spec.broadcasts))
    for step in program.steps:
        if step.op == spec.name:
            assert_op_matches_torch(spec, _operands(program, step), step.param_dict(), data.draw(st.integers(0, 9)))


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
@settings(max_examples=25)
@given(data=st.data())
def test_the_result_size_from_shapes_bounds_the_result(spec: OpSpec, data: st.DataObject) -> None:
    """What spec loading checks before computing a step: never fewer elements than torch's result has."""
    program = data.draw(op_graphs(ops=[spec.name], max_steps=2, numbers=bool(spec.number_slots),
                                  broadcasting=spec.broadcasts))
    for step in program.steps:
        if step.op == spec.name:
            operands = _operands(program, step)
            assert spec.result_elements(operands) >= spec.apply_torch(operands, step.param_dict()).numel()


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_smallest_valid_example_matches_torch(spec: OpSpec) -> None:
    operands, params = valid_example(spec.name)
    assert check_operands(spec, operands, params) is None
    assert_op_matches_torch(spec, operands, params, upstream_seed=0)


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_syntax_means_the_same_as_call(spec: OpSpec) -> None:
    # Snippets and spec files are written in ``syntax``; it must run the op ``call`` runs.
    operands, params = valid_example(spec.name)
    names = [f"x{i}" for i in range(len(operands))]
    wrapped = [Tensor(x) if _is_float_tensor(x) else x for x in operands]
    by_syntax = eval(spec.render(names, params), {"torch": torch}, dict(zip(names, wrapped)))  # noqa: S307
    by_call = spec.apply_candidate(wrapped, params)
    assert torch.equal(by_syntax.data, by_call.data)


# ---- operand checks ---------------------------------------------------------------------


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_integer_tensor_in_a_tensor_slot_is_rejected(spec: OpSpec) -> None:
    operands, params = valid_example(spec.name)
    slot = spec.slots.index(TENSOR)
    operands[slot] = torch.ones_like(operands[slot], dtype=torch.int64)
    assert check_operands(spec, operands, params) == (
        f"operand {slot + 1} of {spec.name} must be a floating-point tensor"
    )


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_numbers_only_where_the_table_allows_them(spec: OpSpec) -> None:
    operands, params = valid_example(spec.name)
    numbers = [2.0 if kind == TENSOR else x for kind, x in zip(spec.slots, operands)]
    refused = [i for i, kind in enumerate(spec.slots) if kind == TENSOR and i not in spec.number_slots]
    expected = (f"operand {refused[0] + 1} of {spec.name} must be a tensor, not a number" if refused
                else f"{spec.name} needs at least one tensor operand")
    assert check_operands(spec, numbers, params) == expected


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_wrong_operand_count_is_rejected(spec: OpSpec) -> None:
    operands, params = valid_example(spec.name)
    assert check_operands(spec, operands + operands[:1], params) == (
        f"{spec.name} takes {len(spec.slots)} operand(s), got {len(operands) + 1}"
    )


@pytest.mark.parametrize("spec", [s for s in SPECS if INDEX in s.slots], ids=lambda s: s.name)
def test_float_tensor_in_an_index_slot_is_rejected(spec: OpSpec) -> None:
    operands, params = valid_example(spec.name)
    slot = spec.slots.index(INDEX)
    operands[slot] = operands[slot].to(torch.float64)
    assert check_operands(spec, operands, params) == f"operand {slot + 1} of {spec.name} must be an int64 tensor"


def _t(*shape: int, start: float = 1.0) -> torch.Tensor:
    """Distinct values start, start + 1, ... in ``shape``."""
    return torch.arange(start, start + math.prod(shape), dtype=torch.float64).reshape(shape)


DOMAIN_ERRORS = [
    ("add", [_t(2, 3), _t(3, 2)], {}, "shapes (2, 3) and (3, 2) do not broadcast"),
    ("matmul", [_t(2, 3), _t(2, 3)], {}, "@ needs (n, m) @ (m, p), got (2, 3) @ (2, 3)"),
    ("matmul", [_t(3), _t(3, 1)], {}, "@ takes two 2-D tensors, got shapes (3,) and (3, 1)"),
    ("div", [_t(2), 0], {}, "division by zero"),
    ("log", [_t(2, start=0.0)], {}, "log needs positive inputs"),
    ("pow", [_t(2, start=-1.0)], {"p": 0.5}, "a non-integer power needs positive inputs"),
    ("maximum", [_t(2, 2), _t(2, 2)], {}, "maximum has ties, where its gradient is ambiguous"),
    ("transpose", [_t(3)], {}, ".T needs a 2-D tensor, got shape (3,)"),
    ("reshape", [_t(2, 3)], {"shape": (4,)}, "cannot reshape (2, 3) (6 elements) to (4,)"),
    ("max_pool2d", [_t(2, 2)], {"k": 2}, "max_pool2d needs (N, C, H, W), got shape (2, 2)"),
    ("avg_pool2d", [_t(1, 1, 3, 4)], {"k": 2}, "avg_pool2d(2) needs H and W divisible by k, got shape (1, 1, 3, 4)"),
    ("conv2d", [_t(1, 2, 3, 3), _t(1, 3, 2, 2)], {}, "conv2d channel mismatch: input has 2, weight expects 3"),
    ("index", [_t(3, 2), torch.tensor([0, 3])], {}, "indices must lie in [0, 3)"),
    ("batch_norm", [_t(1, 3)], {}, "batch_norm needs (N, D) with N >= 2, got shape (1, 3)"),
    ("cross_entropy", [_t(2, 3), torch.tensor([0, 1, 2])], {}, "cross_entropy needs an int64 target of shape (2,)"),
]


@pytest.mark.parametrize(("name", "operands", "params", "message"), DOMAIN_ERRORS,
                         ids=[f"{case[0]}-{i}" for i, case in enumerate(DOMAIN_ERRORS)])
def test_domain_errors_are_stated_verbatim(name: str, operands: list, params: dict, message: str) -> None:
    assert check_operands(OPS[name], operands, params) == message


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_every_domain_rule_has_a_verbatim_case(spec: OpSpec) -> None:
    # Ops without a rule of their own (exp, tanh, ...) are covered by the kind checks above.
    no_rule = OpSpec.__dataclass_fields__["domain"].default
    covered = {OPS[case[0]].domain for case in DOMAIN_ERRORS}
    assert spec.domain is no_rule or spec.domain in covered, f"add a DOMAIN_ERRORS case for {spec.name}"


# ---- members -----------------------------------------------------------------------


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_reference_has_the_member(spec: OpSpec) -> None:
    # Defined by the engine itself, not inherited from object.
    defined = [vars(cls)[spec.member] for cls in Tensor.__mro__[:-1] if spec.member in vars(cls)]
    assert defined, f"reference Tensor lacks {spec.member}"
    assert callable(defined[0]) or isinstance(defined[0], property)


# ---- the fixed situations property checks run for each op ------------------------------------


@pytest.mark.parametrize("spec", SPECS, ids=SPEC_IDS)
def test_each_op_has_its_situations_inside_its_domain(spec: OpSpec) -> None:
    situations = op_situations(spec.name)
    assert [name for name, _ in situations] == ["the op on leaves", "its result weighted", "its result used twice",
                                                 "its input also used outside it"]
    for name, program in situations:
        program.validate()
        assert reaches_output(program.steps, spec.name), name
        assert program.ops_used() <= {spec.name, "mul", "sum"}, name
        outcome = program.run_torch()
        assert outcome.values[program.output].dim() == 0
        assert any(g is not None for g in outcome.grads.values()), name
