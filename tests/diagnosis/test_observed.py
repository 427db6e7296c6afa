"""Naming a failure from what the worker saw (no replay) and from the wrong rules added to the library.

Each test builds the candidate's observation by hand from torch (the numbers a wrong engine would
give), and checks the finding that names it, and that the same finding is not made of an engine
that does not show the fact.
"""

from __future__ import annotations

import torch

from harness.checks.context import Evidence, Observation
from harness.diagnosis.causes import diagnose
from harness.diagnosis.observed import observed_facts
from harness.diagnosis.rule_replay import backward
from harness.diagnosis.symptoms import ENGINE, Finding, localise
from harness.program import Leaf, Program, Step
from harness.report.model import CheckResult

X = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]], dtype=torch.float64)
W = torch.tensor([[2.0, -1.0, 0.5], [-0.5, 1.5, 3.0]], dtype=torch.float64)


def _obs(program: Program, *, values=None, grads=None, error=None, raw=None, requires=None) -> Observation:
    outcome = program.run_torch()
    values = outcome.values if values is None else values
    grads = outcome.grads if grads is None else grads
    wire = {"values": {n: {"dtype": str(v.dtype).removeprefix("torch.")} for n, v in values.items()},
            "grads": {n: {"dtype": "float64"} for n in grads}, "leaf_data": {l.name: {"dtype": "float64"}
                                                                              for l in program.leaves},
            **(raw or {})}
    return Observation(dict(values), dict(requires or outcome.requires_grad), dict(grads),
                       {l.name: True for l in program.leaves}, error, 0.0, wire)


def _failed(program: Program, obs: Observation, check_id: str = "spec:case") -> CheckResult:
    return CheckResult(check_id, "core", "ops", check_id, "failed", "wrong",
                       evidence=Evidence(program, obs, program.run_torch()))


def test_an_op_that_wrote_into_its_operand_is_named_by_what_the_worker_saw():
    program = Program((Leaf("x", X),), (Step("r", "relu", ("x",)), Step("y", "sum", ("r",))), "y")
    seen = _obs(program, raw={"mutated": [{"step": "r", "slot": 0}]})
    assert observed_facts(program, seen, program.run_torch()) == [Finding("relu", 0, "in_place")]
    assert observed_facts(program, _obs(program), program.run_torch()) == []
    _, causes = diagnose([_failed(program, seen), _failed(program, seen, "spec:other")])
    assert (causes[0].bug, causes[0].confidence) == ("relu_in_place", "confirmed")


def test_an_op_that_returned_none_is_named_by_its_op():
    program = Program((Leaf("x", X),), (Step("r", "relu", ("x",)), Step("y", "sum", ("r",))), "y")
    seen = _obs(program, values={}, grads={}, error={"where": "forward: r", "type": "NotATensor",
                                                     "message": "it returned None, not a Tensor", "returned": "None"})
    (cause,) = diagnose([_failed(program, seen)])[1]
    assert cause.name == "`a.relu()`: returns None instead of a tensor of the engine's class"
    assert cause.confidence == "confirmed"


def test_an_exception_in_backward_is_traced_to_a_wrong_requires_grad_before_it():
    program = Program((Leaf("x", X, requires_grad=False), Leaf("w", W)),
                      (Step("h", "mul", ("x", "w")), Step("y", "sum", ("h",))), "y")
    wrong = _obs(program, grads={}, requires={"h": False, "y": False},
                 error={"where": "backward", "type": "RuntimeError", "message": "no graph to walk"})
    assert observed_facts(program, wrong, program.run_torch()) == [Finding(ENGINE, None, "requires_grad_flag")]
    right = _obs(program, grads={}, error={"where": "backward", "type": "RuntimeError", "message": "no graph"})
    assert observed_facts(program, right, program.run_torch()) == []


def test_float32_explains_a_failure_only_when_it_is_all_that_is_wrong():
    program = Program((Leaf("x", X),), (Step("y", "sum", ("x",)),), "y")
    outcome = program.run_torch()
    narrow = _obs(program, values={"y": outcome.values["y"].float()})
    assert observed_facts(program, narrow, outcome) == [Finding("sum", None, "value_dtype", "float32")]
    wrong_too = _obs(program, values={"y": outcome.values["y"].float() + 1})
    assert observed_facts(program, wrong_too, outcome) == []


def test_a_reflected_op_with_swapped_operands_is_named_by_the_order():
    program = Program((Leaf("x", X),), (Step("d", "sub", (1, "x")), Step("y", "sum", ("d",))), "y")
    swapped = {"d": X - 1, "y": (X - 1).sum()}
    (finding,) = localise(program, _obs(program, values=swapped), program.run_torch())
    assert (finding.op, finding.operand, finding.symptom, finding.detail) == ("sub", 0, "swapped", "`1 - x` as `x - 1`")


def test_a_tensor_used_twice_by_one_op_that_gets_one_gradient():
    program = Program((Leaf("x", X),), (Step("h", "mul", ("x", "x")), Step("y", "sum", ("h",))), "y")
    once = _obs(program, grads={"x": X.clone()})  # d(x*x)/dx is 2x; one contribution is x
    assert Finding("mul", 0, "once") in localise(program, once, program.run_torch())
    twice = Program((Leaf("x", X), Leaf("w", W)), (Step("h", "mul", ("x", "w")), Step("y", "sum", ("h",))), "y")
    assert backward(twice, None, ("mul", 0, "once", None))["x"].equal(twice.run_torch().grads["x"])


def test_a_broadcast_sum_without_keepdim_is_named():
    b = torch.tensor([[1.0, 2.0, 3.0]], dtype=torch.float64)
    program = Program((Leaf("x", X), Leaf("b", b)), (Step("h", "add", ("x", "b")), Step("y", "sum", ("h",))), "y")
    grads = dict(program.run_torch().grads)
    grads["b"] = grads["b"].reshape(3)  # summed over the batch without keepdim: (3,) where b is (1, 3)
    found = localise(program, _obs(program, grads=grads), program.run_torch())
    assert Finding("add", 1, "no_keepdim") in found


def test_batch_norm_with_the_batch_statistics_taken_as_constants():
    x = torch.tensor([[1.0, -2.0], [3.0, 0.5], [-1.0, 2.0]], dtype=torch.float64)
    v = torch.tensor([[0.5, -1.0], [2.0, 1.0], [1.0, -3.0]], dtype=torch.float64)
    program = Program((Leaf("x", x), Leaf("v", v, requires_grad=False)),
                      (Step("z", "batch_norm", ("x",), (("eps", 1e-5),)), Step("w", "mul", ("z", "v")),
                       Step("y", "sum", ("w",))), "y")
    grads = dict(program.run_torch().grads)
    grads["x"] = v / torch.sqrt(x.var(dim=0, unbiased=False, keepdim=True) + 1e-5)
    assert Finding("batch_norm", 0, "stats_constant") in localise(program, _obs(program, grads=grads),
                                                                  program.run_torch())


def test_an_error_about_a_read_only_array_in_backward_names_the_in_place_add():
    program = Program((Leaf("x", X),), (Step("h", "add", ("x", "x")), Step("y", "sum", ("h",))), "y")
    seen = _obs(program, grads={}, error={"where": "backward", "type": "ValueError",
                                          "message": "output array is read-only", "node": "h = x + x"})
    assert observed_facts(program, seen, program.run_torch()) == [Finding(ENGINE, None, "read_only")]


def test_a_broadcast_add_that_raises_in_backward_names_the_operand_that_was_stretched():
    b = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    program = Program((Leaf("x", X), Leaf("b", b)),
                      (Step("h", "add", ("x", "b")), Step("k", "mul", ("h", "h")), Step("y", "sum", ("k",))), "y")
    seen = _obs(program, grads={}, error={"where": "backward", "type": "RuntimeError", "node": "h = x + b",
                                          "message": "output with shape [3] doesn't match the broadcast shape [2, 3]"})
    assert observed_facts(program, seen, program.run_torch()) == [Finding("add", 1, "unreduced_raises")]
    # the same error raised in a node whose operands are all of its shape names nothing
    seen = _obs(program, grads={}, error={"where": "backward", "type": "RuntimeError", "node": "k = h * h",
                                          "message": "output with shape [3] doesn't match the broadcast shape [2, 3]"})
    assert observed_facts(program, seen, program.run_torch()) == []


def test_one_exception_met_around_several_ops_is_one_cause_titled_by_the_exception():
    def raised(program: Program, node: str) -> CheckResult:
        seen = _obs(program, values={}, grads={}, error={"where": "backward", "type": "KeyError", "node": node,
                                                         "message": f"{id(program)}"})
        return CheckResult(f"spec:{node}", "core", "accumulation", node, "error", "KeyError",
                           evidence=Evidence(program, seen, program.run_torch()))

    added = Program((Leaf("x", X),), (Step("h", "add", ("x", "x")), Step("y", "sum", ("h",))), "y")
    multiplied = Program((Leaf("x", X),), (Step("h", "mul", ("x", "x")), Step("y", "sum", ("h",))), "y")
    _, causes = diagnose([raised(added, "h = x + x"), raised(multiplied, "h = x * x")])
    assert len(causes) == 1, [c.name for c in causes]
    assert causes[0].name.startswith("backward raises KeyError: ") and "x0 + x1, x0 * x1" in causes[0].name
    assert causes[0].confidence == "unexplained" and len(causes[0].checks) == 2
