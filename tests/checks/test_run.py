"""Running planned checks: which ending means which outcome, and which checks never run."""

from types import SimpleNamespace

import pytest

from harness.checks.context import CandidateError, CandidateTimeout, Failed, NotAttempted
from harness.checks.registry import Check
from harness.checks.run import run_check, triage


def _planned(cid: str, run=lambda ctx: None, requires: frozenset[str] = frozenset()) -> Check:
    return Check(cid, "core", "order", "t", None, requires, 5.0, run)


def _ctx(skip: str | None = None):
    return SimpleNamespace(shared=SimpleNamespace(why_skip=lambda: skip), begin=lambda *a, **k: None, notes={})


def _raising(exc: Exception):
    def run(ctx):
        raise exc

    return run


@pytest.mark.parametrize("ending, outcome, message", [
    (Failed("a.grad differs"), "failed", "a.grad differs"),
    (CandidateError("ValueError: no"), "error", "ValueError: no"),
    (CandidateTimeout("no answer within 5 s"), "timeout", "no answer within 5 s"),
    (NotAttempted("Tensor has no sum"), "not_attempted", "not attempted: Tensor has no sum"),
    (KeyError("x"), "error", "internal grader error: KeyError: 'x'"),
])
def test_each_ending_is_one_outcome(ending, outcome, message):
    timings = {}
    result = run_check(_planned("core.x", _raising(ending)), _ctx(), timings)
    assert (result.outcome, result.message) == (outcome, message)
    assert set(timings) == {"core.x"}


def test_a_check_that_returns_passes_and_a_spent_budget_skips_it_unrun():
    ran = []
    assert run_check(_planned("core.x", ran.append), _ctx(), {}).outcome == "passed" and len(ran) == 1
    skipped = run_check(_planned("core.y", ran.append), _ctx("the submission's time limit ran out"), {})
    assert (skipped.outcome, skipped.message, skipped.kind) == ("skipped", "skipped: the submission's time limit ran out",
                                                                "stopped")
    assert len(ran) == 1


def test_triage_sets_aside_excused_checks_and_those_needing_what_the_engine_lacks():
    plan = [_planned("core.a"), _planned("core.b", requires=frozenset({"__matmul__"})),
            _planned("core.c", requires=frozenset({"feature:broadcasting"})), _planned("core.d"),
            _planned("core.e", requires=frozenset({"sum"}))]
    results, runnable = triage(plan, frozenset({"sum"}), {"broadcast_forward": False}, "Value",
                               lambda c: "not required by the agreed interface" if c.id == "core.d" else None)
    assert [c.id for c in runnable] == ["core.a", "core.e"]
    assert {cid: (r.outcome, r.message, r.kind, r.reason) for cid, r in results.items()} == {
        "core.b": ("not_attempted", "not attempted: waits for `__matmul__` (Value has no __matmul__)", "missing_member",
                   "__matmul__"),
        "core.c": ("not_attempted", "not attempted: adding tensors of shapes (2, 2) and (2,) raises in forward",
                   "missing_feature", "broadcasting"),
        "core.d": ("skipped", "not required by the agreed interface", "excused", ""),
    }


def test_a_stub_waits_like_a_missing_member_and_says_so():
    plan = [_planned("core.a", requires=frozenset({"relu"})), _planned("core.b", requires=frozenset({"feature:no_grad"})),
            _planned("core.c", requires=frozenset({"sum"}))]
    results, runnable = triage(plan, frozenset({"sum"}), {"no_grad": True}, "Tensor", lambda c: None,
                               {"relu": "its body only raises NotImplementedError", "no_grad": "its body is only pass"})
    assert [c.id for c in runnable] == ["core.c"]
    assert {cid: (r.outcome, r.message, r.kind, r.reason) for cid, r in results.items()} == {
        "core.a": ("not_attempted", "not attempted: waits for `relu` (Tensor.relu is a stub: its body only raises "
                                    "NotImplementedError)", "stub", "relu"),
        "core.b": ("not_attempted", "not attempted: waits for `no_grad()` (a stub: its body is only pass)", "stub",
                   "no_grad"),
    }


def test_number_operands_are_judged_per_op_so_one_missing_reflection_skips_only_its_own():
    # The engine's 2 * a raises (no __rmul__), but x - 1 works: a case with 1 - x is still judged.
    plan = [_planned("extensions.a", requires=frozenset({"__rsub__", "feature:numbers:sub"})),
            _planned("extensions.b", requires=frozenset({"feature:numbers:mul"}))]
    features = {"number_forward": False, "number_forward:sub": True, "number_forward:mul": False}
    results, runnable = triage(plan, frozenset({"__rsub__"}), features, "Tensor", lambda c: None)
    assert [c.id for c in runnable] == ["extensions.a"]
    assert (results["extensions.b"].kind, results["extensions.b"].reason) == ("missing_feature", "numbers")


def test_a_member_started_and_left_raising_is_a_stub_and_one_that_may_return_first_is_not():
    import ast

    from harness.stubs import stub_members

    source = '''
class Tensor:
    def relu(self):
        x = self.data
        raise NotImplementedError("relu")

    def sum(self):
        if self.data.dim() == 0:
            return self
        raise NotImplementedError

    def exp(self):
        """Left for later."""
        raise NotImplementedError

    def backward(self):
        record(self)
        raise NotImplementedError("no engine")
'''
    assert stub_members(ast.parse(source), "Tensor") == {
        "relu": "it raises NotImplementedError before doing anything",
        "exp": "its body only raises NotImplementedError",
    }
