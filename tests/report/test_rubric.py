"""The rubric: points per check, the interview bar, and the gates that must pass whatever the points."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.report.model import CheckResult, Interview
from harness.report.rubric import load_rubric

GATES = ["core.accumulation", "core.order", "core.linear_time", "core.grad_types", "core.requires_grad"]


def _result(check_id: str, outcome: str = "passed", level: str = "core") -> CheckResult:
    return CheckResult(check_id, level, "concept", "title", outcome)


def _rubric(tmp_path: Path, text: str):
    path = tmp_path / "rubric.yaml"
    path.write_text(text)
    return load_rubric(path)


def test_the_default_rubric_gates_the_interview_on_the_core_concepts():
    assert list(load_rubric().gates) == GATES


def test_a_failed_gate_fails_the_interview_whatever_the_points():
    rubric = load_rubric()
    checks = [_result(g) for g in GATES if g != "core.order"] + [_result("core.order", "failed"),
                                                                  _result("core.properties")]
    verdict = rubric.interview({"score": 59.0, "max_score": 60.0}, checks, graded=True, needs_review=False)
    assert verdict == Interview(passed=False, bar=48.0, core_score=59.0, needs_review=False,
                                gates_failed=("core.order",), gates_not_attempted=())


def test_a_gate_that_never_ran_is_not_attempted_not_failed():
    rubric = load_rubric()
    checks = [_result(g) for g in GATES if g != "core.order"] + [_result("core.order", "not_attempted")]
    verdict = rubric.interview({"score": 59.0, "max_score": 60.0}, checks, graded=True, needs_review=False)
    assert verdict.gates_failed == () and verdict.gates_not_attempted == ("core.order",)
    assert verdict.passed is False


def test_every_failed_gate_is_named_and_a_non_gate_failure_is_not():
    rubric = load_rubric()
    checks = [_result("core.order", "timeout"), _result("core.linear_time", "error"),
              _result("core.properties", "failed"), _result("followups.properties", "failed", "followups")]
    verdict = rubric.interview({"score": 50.0, "max_score": 60.0}, checks, graded=True, needs_review=False)
    assert verdict.gates_failed == ("core.order", "core.linear_time")
    assert verdict.passed is False


def test_with_every_gate_passed_the_points_decide():
    rubric = load_rubric()
    checks = [_result(g) for g in GATES] + [_result("core.properties", "failed")]
    assert rubric.interview({"score": 48.0, "max_score": 60.0}, checks, graded=True,
                            needs_review=False).passed is True
    assert rubric.interview({"score": 47.0, "max_score": 60.0}, checks, graded=True,
                            needs_review=False).passed is False


def test_a_rubric_may_name_its_own_gates_as_patterns(tmp_path):
    rubric = _rubric(tmp_path, "levels: {core: 10}\ngates: [\"spec:core.order.*\"]\n")
    checks = [_result("core.order", "failed"), _result("spec:core.order.doubling", "failed")]
    verdict = rubric.interview({"score": 10.0, "max_score": 10.0}, checks, graded=True, needs_review=False)
    assert verdict.gates_failed == ("spec:core.order.doubling",)


def test_a_rubric_without_gates_has_none(tmp_path):
    assert _rubric(tmp_path, "levels: {core: 10}\n").gates == ()


@pytest.mark.parametrize(("text", "message"), [
    ("gates: core.order\n", "'gates' is a list of check ids or patterns"),
    ("gates: [1]\n", "'gates' is a list of check ids or patterns"),
    ("gates: [followups.properties]\n",
     "gate 'followups.properties' is not a core check: only the core level decides the interview"),
    ("bonus: 1\n", "unknown key 'bonus' (allowed: levels, weights, interview_bar, gates, agreements)"),
])
def test_a_bad_gates_entry_is_a_one_line_error(tmp_path, text, message):
    path = tmp_path / "rubric.yaml"
    path.write_text(text)
    with pytest.raises(HarnessError) as caught:
        load_rubric(path)
    assert str(caught.value) == f"{path}: {message}"
