"""Naming a failure by op, operand and symptom: exceptions in a backward rule."""

from __future__ import annotations

import torch

from harness.checks.context import Evidence, Observation
from harness.diagnosis.causes import diagnose
from harness.diagnosis.symptoms import Finding, contradicted, localise
from harness.program import Leaf, Program, Step
from harness.report.model import CheckResult

X = torch.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=torch.float64)
W = torch.tensor([[2.0, 1.0], [-1.0, 4.0]], dtype=torch.float64)
NONE_PLUS = "unsupported operand type(s) for +: 'NoneType' and 'Tensor'"


def _weighted(w_requires_grad: bool) -> Program:
    """y = (x * w).sum(): w a constant weight unless ``w_requires_grad``."""
    return Program((Leaf("x", X), Leaf("w", W, requires_grad=w_requires_grad)),
                   (Step("h", "mul", ("x", "w")), Step("y", "sum", ("h",))), "y")


def _raised(node: str, message: str = NONE_PLUS) -> Observation:
    return Observation({}, {}, {}, {}, {"where": "backward", "type": "TypeError", "message": message, "node": node},
                       0.0)


def test_a_rule_that_adds_to_a_constants_none_grad_is_named_by_its_op_and_operand():
    program = _weighted(False)
    found = localise(program, _raised("h = x * w"), program.run_torch())
    assert found == [Finding("mul", 1, "raises_without_grad", "TypeError")]


def test_only_an_exception_about_none_on_a_node_with_a_constant_operand_is_named_so():
    constant, tracked = _weighted(False), _weighted(True)
    assert localise(tracked, _raised("h = x * w"), tracked.run_torch()) == []  # every operand requires grad
    assert localise(constant, _raised("h = x * w", "mat1 and mat2 shapes cannot be multiplied"),
                    constant.run_torch()) == []
    assert localise(constant, _raised("y = h.sum()"), constant.run_torch()) == []  # h requires grad


def test_a_passing_graph_with_the_same_constant_operand_contradicts_it():
    finding = Finding("mul", 1, "raises_without_grad", "TypeError")
    constant, tracked = _weighted(False), _weighted(True)
    assert contradicted(finding, constant, constant.run_torch())
    assert not contradicted(finding, tracked, tracked.run_torch())


def test_the_cause_is_a_requires_grad_one_with_the_node_that_raised():
    program = _weighted(False)
    result = CheckResult("spec:core.sum.weighted", "core", "shapes", "weighted sum", "error", f"TypeError: {NONE_PLUS}",
                         evidence=Evidence(program, _raised("h = x * w"), program.run_torch()))
    _, causes = diagnose([result])
    (cause,) = causes
    assert (cause.op, cause.operand, cause.symptom, cause.concept) == (
        "mul", "b", "raises_without_grad", "requires_grad")
    assert cause.name == ("`a * b`: the backward rule raises TypeError when `b` does not require grad (its .grad "
                             "is None)")


def test_a_transpose_that_passes_no_gradient_back_is_named_once_nothing_masks_it():
    # y = (x.T * c).sum() with a .T that records its input but has no backward rule: x.grad stays the
    # zeros the engine allocated (torch: c.T).
    c = torch.tensor([[1.0, 0.0], [-1.0, 2.0], [0.5, 3.0]], dtype=torch.float64)
    x = torch.tensor([[1.0, -2.0, 0.5], [3.0, 1.0, -1.0]], dtype=torch.float64)
    program = Program((Leaf("x", x), Leaf("c", c, requires_grad=False)),
                      (Step("t", "transpose", ("x",)), Step("h", "mul", ("t", "c")), Step("y", "sum", ("h",))), "y")
    expected = program.run_torch()
    obs = Observation(dict(expected.values), {}, {"x": torch.zeros_like(x), "c": None}, {"x": True}, None, 0.0)
    assert localise(program, obs, expected)[0] == Finding("transpose", 0, "missing")
