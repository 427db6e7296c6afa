"""A graph the engine passed is held to the replays as its check ran it: a one-element output that is not 0-d
is run with a ``.sum()`` appended (the grader's, never the candidate's), and replaying it without that sum
could "contradict" a bug with a graph the engine never ran."""

from __future__ import annotations

from harness.checks.builders import program, tensor
from harness.checks.context import scalar_root
from harness.diagnosis.causes import _as_run


def test_a_one_element_output_is_replayed_with_the_sum_its_check_appended():
    p = program({"a": (tensor([[2.0]]), True), "b": (tensor([[3.0]]), True)}, [("y", "add", ["a", "b"])])
    ran, outcome = _as_run(p, p.run_torch())
    assert ran == scalar_root(p, p.run_torch()) and ran is not p
    assert ran.steps[-1].op == "sum" and ran.steps[-1].args == ("y",)
    assert outcome.values[ran.output].dim() == 0 and outcome.grads["a"].shape == (1, 1)


def test_a_0d_output_is_replayed_as_it_is():
    zero_d = program({"a": (tensor(2.0), True)}, [("y", "relu", ["a"])])
    assert _as_run(zero_d, zero_d.run_torch())[0] is zero_d
