"""A failure is told by what went wrong in it, not by the concept of the check that saw it.

One bug fails checks of many concepts: an accumulation bug fails the timing check's wide
graph, the memory probe's gradient, the broadcasting checks. Such a failure must be charged
to that bug (or, when no catalogued bug reproduces it, titled by what went wrong: a wrong
gradient, an exception, a hang), never given the hint of the concept its check is about.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from harness.checks.context import CandidateError, Evidence, Failed, Observation, Verdict
from harness.checks.properties import Counterexample, _raise
from harness.checks.targeted import memory_release
from harness.checks.timing import wide_graph
from harness.diagnosis.causes import diagnose
from harness.diagnosis.matching import replay
from harness.diagnosis.mutants import load_mutant
from harness.program import Leaf, Program, Step, encode_tensor
from harness.report.model import CheckResult

LINEAR_TIME_HINT = ("Keep visited nodes in a set (keyed by id), not a list: membership tests must be O(1). "
                    "Read `grade explain linearity`.")


def _linear_time(grad: torch.Tensor, width: int = 64) -> CheckResult:
    """core.linear_time failed on its wide graph's gradient, as the check reports it (no torch outcome)."""
    program = wide_graph(width)
    obs = Observation({}, {}, {"x": grad}, {"x": True}, None, 0.0)
    want = 2.0 * width
    return CheckResult("core.linear_time", "core", "linearity", "Backward takes time linear in the size of the graph.",
                       "failed", f"on a wide graph of {len(program.steps)} nodes x.grad is {grad.tolist()}, "
                                 f"expected {want:g} everywhere",
                       details={"hint": LINEAR_TIME_HINT}, evidence=Evidence(program, obs, None))


def _broadcast_error() -> CheckResult:
    """A broadcasting check whose add raised: the engine never wrote broadcasting."""
    program = Program((Leaf("x", torch.ones(2, 3, dtype=torch.float64)), Leaf("b", torch.ones(3, dtype=torch.float64))),
                      (Step("h", "add", ("x", "b")), Step("y", "sum", ("h",))), "y")
    error = {"where": "backward", "type": "RuntimeError", "message": "The size of tensor a (3) must match the size "
             "of tensor b (2) at non-singleton dimension 1", "node": "h = x + b"}
    obs = Observation({}, {}, {}, {}, error, 0.0)
    return CheckResult("spec:followups.broadcast.bias_row", "followups", "broadcasting", "bias row", "error",
                       "RuntimeError: The size of tensor a (3) ...", details={"hint": "sum over the broadcast axes. "
                       "Read `grade explain broadcasting`."}, evidence=Evidence(program, obs, program.run_torch()))


def _causes_of(check: str, causes) -> list:
    return [c for c in causes if check in c.checks]


def test_an_accumulation_bug_on_the_timing_graph_is_charged_to_that_bug():
    # The overwrite mutant on the wide graph: each x + x keeps one of its two contributions.
    wrong = replay(wide_graph(64), load_mutant("overwrite")).grads["x"]
    assert wrong.tolist() != [128.0, 128.0]
    checks, causes = diagnose([_linear_time(wrong), _broadcast_error()])
    (cause,) = _causes_of("core.linear_time", causes)
    assert cause.bug == "overwrite" and "spec:followups.broadcast.bias_row" not in cause.checks
    assert "visited" not in cause.hint
    assert dict((r.id, r.diagnosis) for r in checks)["core.linear_time"] == ("overwrite",)


def test_a_wrong_gradient_no_bug_reproduces_is_titled_as_one_not_by_the_checks_concept():
    checks, causes = diagnose([_linear_time(torch.tensor([5.0, -3.0], dtype=torch.float64)), _broadcast_error()])
    (cause,) = _causes_of("core.linear_time", causes)
    assert cause.checks == ("core.linear_time",)  # not grouped with the broadcasting error
    assert cause.name == "wrong gradients around x0 + x1", cause.name
    assert "visited" not in cause.hint and "broadcast" not in cause.hint
    (other,) = _causes_of("spec:followups.broadcast.bias_row", causes)
    # Titled by the exception that was raised, not by the checks' concept either.
    assert other.name == ("x0 + x1: backward raises RuntimeError: The size of tensor a (3) must match the size of "
                          "tensor b (2) at non-singleton dimension 1"), other.name


class _Probe:
    """A context whose memory probe answers with ``facts``, as the worker would."""

    def __init__(self, facts: dict) -> None:
        self.facts = facts

    def probe(self, kind: str, *, timeout: float, **fields) -> dict:
        assert kind == "memory_release"
        return self.facts


def test_a_wrong_gradient_in_the_memory_probe_is_charged_to_its_bug_not_to_memory():
    # The probe's graph: y = (relu(x @ w) * relu(x @ w)).sum(); its gradient from an engine that overwrites.
    gen = torch.Generator().manual_seed(3)
    x, w = torch.randn(4, 3, generator=gen, dtype=torch.float64), torch.randn(3, 5, generator=gen, dtype=torch.float64)
    program = Program((Leaf("x", x), Leaf("w", w)), (Step("a", "matmul", ("x", "w")), Step("h", "relu", ("a",)),
                                                     Step("k", "mul", ("h", "h")), Step("y", "sum", ("k",))), "y")
    wrong = replay(program, load_mutant("overwrite")).grads["x"]
    assert not torch.allclose(wrong, program.run_torch().grads["x"])
    facts = {"alive_before": 2, "alive_after": 0, "grad_x": encode_tensor(wrong), "x": encode_tensor(x),
             "w": encode_tensor(w)}
    with pytest.raises(Failed) as failed:
        memory_release(_Probe(facts))
    assert "references" not in failed.value.details.get("hint", "")
    result = CheckResult("followups.memory_release", "followups", "memory", "memory", "failed", failed.value.message,
                         details=failed.value.details, evidence=failed.value.evidence)
    checks, causes = diagnose([result])
    assert checks[0].diagnosis == ("overwrite",)
    assert [c.bug for c in causes] == ["overwrite"]


def _properties_ending(kind: str, message: str, tmp_path) -> CheckResult:
    """What the properties check reports when its graph ends with ``kind`` (an error, or a hang): its own ending."""
    two = torch.ones(2, 2, dtype=torch.float64)
    program = Program((Leaf("x0", two), Leaf("x1", two)), (Step("x2", "add", ("x0", "x1")), Step("x3", "sum", ("x2",))),
                      "x3")
    ctx = SimpleNamespace(path=tmp_path / "solution.py", class_name="Tensor")
    with pytest.raises(CandidateError) as ended:
        _raise(ctx, Counterexample(program, Verdict(kind, message)), "random graphs")
    return CheckResult("core.properties", "core", "properties", "random graphs", "error", ended.value.message,
                       details={"hint": "Read `grade explain properties`."}, evidence=ended.value.evidence)


def test_a_hang_is_titled_as_a_hang(tmp_path):
    result = _properties_ending("timeout", "running x0 + x1: no answer within 5 s (the process was killed)", tmp_path)
    _, causes = diagnose([result])
    assert [c.name for c in causes] == ["no answer in time on graphs around x0 + x1"]
    assert "loop" in causes[0].hint


def test_an_exception_whose_words_read_like_a_hang_is_still_an_exception(tmp_path):
    # The message is the submission's: its words cannot make an exception a hang.
    result = _properties_ending("error", "running x0 + x1: raised RuntimeError: no answer within 5 s", tmp_path)
    _, causes = diagnose([result])
    assert [c.name for c in causes] == ["exceptions around x0 + x1"]


def test_a_nan_gradient_counts_as_an_element_that_differs():
    from harness.diagnosis.symptoms import where_it_differs as _where_it_differs

    got = torch.tensor([[float("nan"), 2.0], [3.0, 4.0]], dtype=torch.float64)
    want = torch.tensor([[0.0, 2.0], [3.0, 5.0]], dtype=torch.float64)
    assert _where_it_differs(got, want) == ": 2 of 4 elements differ, the worst at [0, 0] (got nan, torch 0)"
