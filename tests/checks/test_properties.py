"""Property checks: guaranteed coverage of their situations, and op checks that keep their op."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from harness.checks.context import DEFAULT_PARTS, CandidateError, Context, Failed, Observation, Shared, judge
from harness.checks.properties import find_counterexample
from harness.checks.situations import BROADCAST_SITUATIONS, CORE_SITUATIONS, situations_for
from harness.checks.strategies import op_graphs, reaches_output
from harness.checks.registry import registered
from harness.ops import OPS
from harness.sandbox.launch import Sandbox

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
CORPUS = ROOT / "corpus" / "conventions"
REFERENCE_LIKE = CORPUS / "reference_like.py"

# (engine, change to reference_like.py that makes the bug) for bugs no file in the zoo has.
VARIANTS = {
    "requires_grad_needs_all_inputs": ("any(p.requires_grad for p in parents)", "all(p.requires_grad for p in parents)"),
    "size_one_axis_kept": ("        if n == 1 and g.shape[axis] != 1:\n", "        if False:\n"),
    "exp_ignores_upstream": ("lambda g: (g * e,)", "lambda g: (e,)"),
    "div_divisor_sign": ("_unbroadcast(-g * a / (b * b), b.shape)", "_unbroadcast(g * a / (b * b), b.shape)"),
    "log_reciprocal_squared": ("lambda g: (g / x,)", "lambda g: (g / (x * x),)"),
}

# Each known bug, the check that must catch it at every seed, and the situation that catches it.
KNOWN_BUGS = [
    ("core.properties", SOLUTIONS / "overwrite_grad.py", "a leaf used twice by one op"),
    ("core.properties", SOLUTIONS / "wrong_operand_mul.py", "a leaf used by two ops"),
    ("core.properties", SOLUTIONS / "bfs_no_topo.py", "a shared intermediate (a diamond)"),
    ("core.properties", CORPUS / "bfs_order.py", "paths of different lengths to one node"),
    ("core.properties", SOLUTIONS / "flipped_transpose.py", "a non-square matmul"),
    ("core.properties", SOLUTIONS / "relu_grad_at_zero.py", "relu at zero and below"),
    ("core.properties", "requires_grad_needs_all_inputs", "a leaf that does not require grad"),
    ("core.properties", SOLUTIONS / "sum_not_expanded.py", "sum of a matrix"),
    ("followups.properties", SOLUTIONS / "unreduced_broadcast.py", "a row broadcast over the leading axis"),
    ("followups.properties", CORPUS / "bias_total_sum.py", "a row broadcast over the leading axis"),
    ("followups.properties", "size_one_axis_kept", "a column broadcast over a size-1 axis"),
    ("extensions.op.exp", "exp_ignores_upstream", "exp: its result weighted"),
    ("extensions.op.div", "div_divisor_sign", "div: the op on leaves"),
    ("extensions.op.log", "log_reciprocal_squared", "log: the op on leaves"),
    ("extensions.properties", "exp_ignores_upstream", "exp: its result used twice"),
]


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox.launch() as sb:
        yield sb


def _engine(source: Path | str, tmp_path: Path) -> Path:
    if isinstance(source, Path):
        return source
    old, new = VARIANTS[source]
    text = REFERENCE_LIKE.read_text()
    assert text.count(old) == 1, source
    path = tmp_path / f"{source}.py"
    path.write_text(text.replace(old, new))
    return path


def _check(check_id: str) -> Any:
    return next(c for c in registered() if c.id == check_id)


def test_each_situation_is_a_valid_program_that_requires_only_its_level():
    for situation, program in CORE_SITUATIONS:
        program.validate()
        assert program.level() == "core", situation
    for situation, program in BROADCAST_SITUATIONS:
        program.validate()
        assert "feature:broadcasting" in program.requirements(), situation


@pytest.mark.parametrize(("check_id", "engine", "situation"), KNOWN_BUGS,
                         ids=[f"{c}-{e if isinstance(e, str) else e.stem}" for c, e, _ in KNOWN_BUGS])
def test_a_known_bug_is_caught_by_its_situation_at_every_seed(check_id, engine, situation, sandbox, tmp_path):
    path = _engine(engine, tmp_path)
    shared = Shared(deadline=float("inf"))
    first = Context(sandbox, path, "Tensor", path.stem, shared)
    check = _check(check_id)
    try:
        members = frozenset(first.worker().hello["members"])
        # The situation alone is a witness of the bug...
        fixed = dict(CORE_SITUATIONS) | dict(BROADCAST_SITUATIONS) | dict(situations_for(list(OPS)))
        program = fixed[situation]
        assert judge(program, first.run(program), program.run_torch(), DEFAULT_PARTS) is not None
    finally:
        first.retire()
    # ...and the check meets it (or an earlier one) before any random graph, whatever the seed.
    for seed in range(10):
        ctx = Context(sandbox, path, "Tensor", path.stem, shared, seed=seed, max_examples=50, members=members)
        try:
            ctx.begin(time.perf_counter() + 60.0, fresh=False)
            with pytest.raises((Failed, CandidateError)) as caught:
                check.run(ctx)
            assert caught.value.message.startswith("failing graph ("), caught.value.message
            assert caught.value.evidence is not None and caught.value.evidence.observation is not None
        finally:
            ctx.retire()


# ---- op checks keep their op ---------------------------------------------------------------


class _MulIsBroken:
    """A stand-in for a worker: every program with a * raises, every other one matches torch."""

    module_name, class_name = "solution", "Tensor"

    def run(self, program: Any, **_: Any) -> Observation:
        if "mul" in program.ops_used():
            return Observation({}, {}, {}, {}, {"type": "RuntimeError", "message": "mul is broken"}, 0.0)
        outcome = program.run_torch()
        return Observation(dict(outcome.values), dict(outcome.requires_grad), dict(outcome.grads), {}, None, 0.0)


@pytest.mark.parametrize("name", ["log", "div"])
def test_a_shrunk_counterexample_of_an_op_check_still_contains_its_op(name):
    ops = [name, "mul", "sum"]
    integer_values = not OPS[name].transcendental
    focused = find_counterexample(_MulIsBroken(), op_graphs(ops=ops, focus=name, integer_values=integer_values),
                                  max_examples=20, seed_value=0)
    assert focused is not None
    assert reaches_output(focused.program.steps, name), focused.program.expression()


def test_without_a_focus_the_shrinker_drops_the_op():
    # What op checks did before: the smallest failure was a bare product, no log in it.
    found = find_counterexample(_MulIsBroken(), op_graphs(ops=["log", "mul", "sum"], integer_values=False),
                                max_examples=20, seed_value=0)
    assert found is not None and "log" not in found.program.ops_used()
