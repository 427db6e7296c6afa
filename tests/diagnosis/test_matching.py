"""Replaying failing graphs through the mutants: who reproduces what, and how causes are grouped."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings

from harness.checks.context import DEFAULT_PARTS, Evidence, Observation, judge
from harness.checks.strategies import op_graphs
from harness.diagnosis.catalogue import BUGS
from harness.diagnosis.causes import diagnose
from harness.diagnosis.matching import (agree, candidate_bugs, match_evidence, match_signatures, replay)
from harness.diagnosis.mutants import MUTANTS, load_mutant, reference_source
from harness.diagnosis.symptoms import localise
from harness.ops import OPS
from harness.program import Leaf, Program, Step
from harness.report.model import CheckResult
from harness.specs import DEFAULT_SPECS_DIR, load_cases

CORE = [name for name, spec in OPS.items() if spec.level == "core"]
CASES = load_cases([DEFAULT_SPECS_DIR])


def _reference():
    """The reference engine loaded like the mutants: from its source, in a module of its own."""
    import types

    module = types.ModuleType("reference_for_tests")
    exec(compile(reference_source(), "<reference>", "exec"), module.__dict__)
    return module


ENGINE = _reference()


def t(values):
    return torch.tensor(values, dtype=torch.float64)


def program(leaves, steps, **kw) -> Program:
    built = tuple(Step(name, op, tuple(args)) for name, op, args in steps)
    return Program(tuple(Leaf(n, v, rg) for n, (v, rg) in leaves.items()), built, built[-1].name, **kw)


X_PLUS_X = program({"x": (t([1.0, 2.0]), True)}, [("h", "add", ["x", "x"]), ("y", "sum", ["h"])])


def same(a: Observation, b: Observation) -> bool:
    if (a.error is None) != (b.error is None):
        return False
    parts = ("values", "requires_grad", "grads", "leaf_data_unchanged")
    return all(agree(getattr(a, p).get(k), getattr(b, p).get(k)) for p in parts for k in getattr(b, p))


# ---- comparing ----------------------------------------------------------------------------


def test_agree_compares_none_shapes_values_and_non_finite_alike():
    assert agree(None, None) and agree(True, True) and not agree(True, False)
    assert not agree(None, t([1.0])) and not agree(t([1.0]), None)
    assert not agree(t([1.0, 2.0]), t([[1.0, 2.0]]))
    assert agree(t([1.0, 2.0]), t([1.0, 2.0 + 1e-9])) and not agree(t([1.0, 2.0]), t([1.0, 2.1]))
    assert agree(t([float("nan"), 1.0]), t([float("inf"), 1.0]))  # both overflowed
    assert not agree(t([float("nan")]), t([1.0]))
    assert not agree({"not_tensor": "list"}, {"not_tensor": "list"})


# ---- replaying --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES[::6], ids=lambda c: c.id)
def test_replaying_the_reference_gives_torch_outcome(case):
    obs = replay(case.program, ENGINE)
    assert obs.error is None
    for step in case.program.steps:
        assert agree(obs.values[step.name], case.expected.values[step.name]), step.name
    for leaf in case.program.leaves:
        if not leaf.raw:
            assert agree(obs.grads[leaf.name], case.expected.grads[leaf.name]), leaf.name


def test_a_replay_reports_an_error_with_its_place():
    p = program({"a": (t([[1.0, 2.0, 3.0]]), True), "b": (t([[1.0], [2.0]]), True)},
                [("c", "matmul", ["b", "a"]), ("y", "sum", ["c"])])
    obs = replay(p, load_mutant("matmul_left_flipped"))
    assert obs.error["where"] == "backward" and obs.error["type"] == "RuntimeError"


@settings(max_examples=60)
@given(op_graphs(ops=CORE, broadcasting=True))
def test_a_mutant_skipped_for_a_graph_runs_it_exactly_as_the_reference(p):
    # The replays leave out mutants that cannot change a graph's outcome: that must be true.
    expected = replay(p, ENGINE)
    considered = {b.id for b in candidate_bugs(p)}
    for b in BUGS:
        if b.id not in considered and not b.exponential:
            for variant in range(1 + len(MUTANTS[b.id].variants)):
                assert same(replay(p, load_mutant(b.id, variant)), expected), (b.id, p.expression())


def _witness(bug_id: str) -> Program | None:
    """A spec case (or a deep chain) that the bug's mutant gets wrong."""
    if MUTANTS[bug_id].shows_on == "deep":
        steps = [("h0", "add", ["x", "x"])] + [(f"h{i}", "add", [f"h{i - 1}", "x"]) for i in range(1, 1200)]
        return program({"x": (t(1.0), True)}, steps)
    for case in CASES:
        if candidate_bugs(case.program) and bug_id in {b.id for b in candidate_bugs(case.program)}:
            obs = replay(case.program, load_mutant(bug_id))
            if obs.error is not None or not same(obs, replay(case.program, ENGINE)):
                return case.program
    return None


@pytest.mark.parametrize("b", [b for b in BUGS if MUTANTS[b.id].shows_on != "never"], ids=lambda b: b.id)
def test_each_mutant_is_recognised_in_its_own_failures(b):
    witness = _witness(b.id)
    assert witness is not None, "no spec case shows this bug"
    found = match_evidence(witness, replay(witness, load_mutant(b.id)), witness.run_torch())
    best = max(m.fit for m in found)
    assert any(m.bug == b.id and m.fit == best for m in found), found


def test_a_wrong_answer_no_bug_gives_matches_nothing():
    obs = replay(X_PLUS_X, ENGINE)
    obs.grads["x"] = t([7.0, -7.0])
    assert match_evidence(X_PLUS_X, obs, X_PLUS_X.run_torch()) == []


def test_an_error_matches_by_type_and_place_and_best_with_the_same_message():
    p = program({"a": (t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), True), "b": (t([[1.0], [2.0], [3.0]]), True)},
                [("c", "matmul", ["a", "b"]), ("y", "sum", ["c"])])
    obs = replay(p, load_mutant("matmul_right_flipped", 1))  # the transpose forgotten
    found = match_evidence(p, obs, p.run_torch())
    assert found[0].bug == "matmul_right_flipped" and found[0].fit == 1.0


# ---- signatures ---------------------------------------------------------------------------------


def test_a_probe_failure_matches_by_its_reason_unless_a_passing_check_contradicts_it():
    assert {m.bug for m in match_signatures("followups.deep_graph", "recursion", [])} == {"recursive_topo",
                                                                                         "path_recursion"}
    assert [m.bug for m in match_signatures("followups.deep_graph", "recursion", ["core.order"])] == ["recursive_topo"]
    assert match_signatures("followups.deep_graph", "wrong_gradient", []) == []
    # The reason is a field: a message that reads like a match is not one.
    assert match_signatures("followups.deep_graph", "", []) == []


# ---- root causes ----------------------------------------------------------------------------------


def _failed(check_id: str, p: Program, obs: Observation, level: str = "core", concept: str = "accumulation"):
    return CheckResult(check_id, level, concept, check_id, "failed", "wrong", details={"snippet": f"# {check_id}",
                       "hint": f"hint of {check_id}"}, evidence=Evidence(p, obs, p.run_torch()))


def test_failures_are_grouped_by_bug_the_engines_structure_first_then_by_points():
    relu = program({"x": (t([0.0, -1.0, 2.0]), True)}, [("r", "relu", ["x"]), ("y", "sum", ["r"])])
    square = program({"x": (t([1.0, 2.0]), True)}, [("h", "mul", ["x", "x"]), ("y", "sum", ["h"])])
    overwrite, at_zero = load_mutant("overwrite"), load_mutant("relu_grad_at_zero")
    garbage = replay(square, ENGINE)
    garbage.grads["x"] = t([5.0, 5.0])
    results = [
        _failed("a", X_PLUS_X, replay(X_PLUS_X, overwrite)),
        _failed("b", square, replay(square, overwrite)),
        _failed("c", relu, replay(relu, at_zero), concept="routing"),
        _failed("d", square, garbage, concept="ops"),
        CheckResult("e", "core", "order", "e", "passed"),
    ]
    graded, causes = diagnose(results, points={"a": 1.0, "b": 1.0, "c": 5.0, "d": 0.5})
    # Accumulation is the engine's structure: it comes before an op's rule whatever the points.
    assert [(c.bug, c.checks, c.points) for c in causes] == [
        ("overwrite", ("a", "b"), 2.0), ("relu_grad_at_zero", ("c",), 5.0), (None, ("d",), 0.5)]
    assert causes[1].snippet == "# c" and causes[1].hint == BUGS[[b.id for b in BUGS].index(
        "relu_grad_at_zero")].hint
    # Garbage gradients of x * x: the op and operand are named, the relation is not.
    assert causes[2].name == "`a * b`: the gradient of `a` is wrong, in no simple relation to the right one: 2 of 2 elements differ, the worst at [0] (got 5, torch 2)"
    assert (causes[2].op, causes[2].operand, causes[2].symptom) == ("mul", "a", "wrong_rule")
    diagnosis = {r.id: r.diagnosis for r in graded}
    assert diagnosis["a"][0] == "overwrite" and diagnosis["c"][0] == "relu_grad_at_zero"
    assert diagnosis["d"] == () and diagnosis["e"] == ()


def test_an_integrity_finding_names_its_bug_first():
    results = [_failed("a", X_PLUS_X, replay(X_PLUS_X, load_mutant("overwrite")))]
    _, causes = diagnose(results, ["at run time: x.grad carries torch autograd history (requires_grad or grad_fn)"],
                         points={"a": 9.0})
    assert [c.bug for c in causes] == ["grad_has_history", "overwrite"]
    assert causes[0].checks == () and causes[0].snippet == ""


# ---- the conventions judging forgives ------------------------------------------------------


def _shape_1_twin(obs: Observation, name: str) -> Observation:
    """The same observation from an engine whose ``sum()`` returns shape (1,) where torch gives a 0-d tensor."""
    return dataclasses.replace(obs, values={**obs.values, name: obs.values[name].reshape(1)})


def test_matching_forgives_a_one_element_result_exactly_as_judging_does():
    # h = a * a; y = (h + a).sum(): a used twice, so an overwritten gradient shows (a.grad 1 where 2a + 1).
    p = program({"a": (t([[1.0, -2.0], [0.5, 3.0]]), True)},
                [("h", "mul", ["a", "a"]), ("s", "add", ["h", "a"]), ("y", "sum", ["s"])])
    expected = p.run_torch()
    right = _shape_1_twin(replay(p, ENGINE), "y")
    assert judge(p, right, expected, DEFAULT_PARTS) is None  # judging forgives the (1,) shape
    assert match_evidence(p, right, expected) == [] and localise(p, right, expected) == []

    zero_d = replay(p, load_mutant("overwrite"))
    shape_1 = _shape_1_twin(zero_d, "y")
    assert judge(p, shape_1, expected, DEFAULT_PARTS) is not None
    assert "overwrite" in [m.bug for m in match_evidence(p, zero_d, expected)]
    # The (1,) twin is the same bug, matched and localised as the 0-d one is.
    assert match_evidence(p, shape_1, expected) == match_evidence(p, zero_d, expected)
    assert localise(p, shape_1, expected) == localise(p, zero_d, expected) != []
    failing = [CheckResult(f"c{i}", "core", "accumulation", "t", "failed", "wrong",
                           evidence=Evidence(p, obs, expected)) for i, obs in enumerate([shape_1])]
    _, causes = diagnose(failing)
    assert causes[0].bug == "overwrite" or causes[0].symptom == "overwritten", causes[0].name


def test_matching_still_tells_a_one_element_gradient_of_the_wrong_shape():
    # A 1x1 matrix summed: torch's gradient is (1, 1); a 0-d one is sum_not_expanded (judging fails it too).
    p = program({"a": (t([[2.0]]), True)}, [("y", "sum", ["a"])])
    expected = p.run_torch()
    wrong = replay(p, load_mutant("sum_not_expanded"))
    assert wrong.grads["a"].shape == ()
    assert judge(p, wrong, expected, DEFAULT_PARTS) is not None
    assert "sum_not_expanded" in [m.bug for m in match_evidence(p, wrong, expected)]
