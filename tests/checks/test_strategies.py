"""The random-graph strategy: valid programs, the promised variety, and small shrinks."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import torch
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from harness.ops import INDEX, LEVELS, OPS
from harness.program import Program
from harness.checks.strategies import op_graphs, programs_for_level, reaches_output

CORE = [name for name, spec in OPS.items() if spec.level == "core"]
FOUR_D = ["max_pool2d", "avg_pool2d", "conv2d"]


def test_the_four_d_ops_are_the_ones_declaring_rank_4():
    assert [name for name, spec in OPS.items() if spec.rank == 4] == FOUR_D


def test_an_op_of_a_rank_no_leaf_feeds_is_refused(monkeypatch):
    import dataclasses

    monkeypatch.setitem(OPS, "volume", dataclasses.replace(OPS["relu"], name="volume", rank=5))
    with pytest.raises(ValueError) as refused:
        collect(op_graphs(ops=["volume", "sum"]), 1)
    assert str(refused.value) == "op volume declares rank 5: random graphs draw 2-D and (N, C, H, W) leaves only"


def collect(strategy: Any, max_examples: int = 100) -> list[Program]:
    programs: list[Program] = []

    @settings(max_examples=max_examples)
    @given(strategy)
    def run(program: Program) -> None:
        programs.append(program)

    run()
    return programs


def smallest(strategy: Any, condition: Callable[[Program], bool]) -> Program:
    return find(strategy, condition, settings=settings(database=None, derandomize=True, max_examples=500,
                                                       suppress_health_check=list(HealthCheck)))


def _values(program: Program) -> dict[str, torch.Tensor]:
    """Every node's value by name: leaves and the oracle's step values."""
    return {leaf.name: leaf.value for leaf in program.leaves} | program.run_torch().values


def _share(programs: list[Program], condition: Callable[[Program], bool]) -> float:
    return sum(map(condition, programs)) / len(programs)


# ---- validity -----------------------------------------------------------------------


@pytest.mark.parametrize("options", [
    {}, {"broadcasting": True}, {"numbers": True}, {"integer_values": False},
    {"broadcasting": True, "numbers": True, "integer_values": False},
], ids=["plain", "broadcasting", "numbers", "floats", "all"])
@settings(max_examples=60)
@given(data=st.data())
def test_programs_are_valid_and_use_only_the_requested_ops(options: dict, data: st.DataObject) -> None:
    ops = data.draw(st.lists(st.sampled_from(list(OPS)), min_size=1, max_size=5, unique=True))
    program = data.draw(op_graphs(ops=ops, **options))
    program.validate()
    assert program.steps and program.ops_used() <= set(ops)
    features = {r for r in program.requirements() if r.startswith("feature:")}
    if not options.get("broadcasting"):
        assert "feature:broadcasting" not in features
    if not options.get("numbers"):
        assert not any(f.startswith("feature:numbers") for f in features)
    out = program.run_torch().values[program.output]
    assert (program.upstream is None) == (out.numel() == 1)
    assert program.output == program.steps[-1].name


@pytest.mark.parametrize("name", list(OPS))
def test_each_op_is_generated_often_when_requested(name: str) -> None:
    programs = collect(op_graphs(ops=[name, "mul", "sum"], integer_values=not OPS[name].transcendental), 40)
    assert _share(programs, lambda p: name in p.ops_used()) >= 0.1


def test_leaf_kinds_follow_the_requested_ops() -> None:
    core = collect(op_graphs(ops=CORE), 50)
    assert all(leaf.value.dim() <= 2 and leaf.value.is_floating_point() for p in core for leaf in p.leaves)
    pooled = collect(op_graphs(ops=FOUR_D), 30)
    assert all(any(leaf.value.dim() == 4 for leaf in p.leaves) for p in pooled)
    indexed = collect(op_graphs(ops=[n for n, s in OPS.items() if INDEX in s.slots]), 30)
    for p in indexed:
        raw = [leaf for leaf in p.leaves if leaf.raw]
        assert raw and all(leaf.value.dtype == torch.int64 and not leaf.requires_grad for leaf in raw)


def test_leaves_mix_requires_grad_and_integer_values_have_zeros() -> None:
    programs = collect(op_graphs(ops=CORE), 100)
    leaves = [leaf for p in programs for leaf in p.leaves]
    assert any(not leaf.requires_grad for leaf in leaves)
    assert all(leaf.requires_grad for p in programs for leaf in p.leaves[:1])
    values = torch.cat([leaf.value.reshape(-1) for leaf in leaves])
    assert torch.equal(values, values.round()) and values.abs().max() <= 4
    # Exact zeros in front of relu: PyTorch's choice at the kink gets tested.
    assert any(bool((_values(p)[step.args[0]] == 0).any()) for p in programs for step in p.steps if step.op == "relu")


def test_square_and_non_square_products_both_occur() -> None:
    programs = collect(op_graphs(ops=["matmul", "sum"]), 100)
    shapes = {tuple(leaf.value.shape) for p in programs if "matmul" in p.ops_used() for leaf in p.leaves}
    assert any(a == b for a, b in shapes) and any(a != b for a, b in shapes)


def test_broadcasting_occurs_when_asked() -> None:
    programs = collect(op_graphs(ops=CORE, broadcasting=True), 100)
    assert _share(programs, lambda p: "feature:broadcasting" in p.requirements()) >= 0.1


def test_numbers_occur_when_asked() -> None:
    programs = collect(op_graphs(ops=CORE, numbers=True), 100)
    assert _share(programs, lambda p: any(r.startswith("feature:numbers") for r in p.requirements())) >= 0.1


def test_maximum_never_broadcasts_implicitly() -> None:
    # torch.maximum broadcasts, but the contract promises broadcasting only for + and * (and - /).
    for p in collect(op_graphs(ops=["maximum", "sum"], broadcasting=True), 100):
        values = _values(p)
        for step in p.steps:
            if step.op == "maximum":
                assert values[step.args[0]].shape == values[step.args[1]].shape


def test_without_sum_a_non_scalar_output_gets_an_upstream_gradient() -> None:
    programs = collect(op_graphs(ops=["add", "mul", "matmul", "relu"]), 50)
    upstreams = [p.upstream for p in programs if p.upstream is not None]
    assert upstreams
    assert any(bool((u != 1).any()) for u in upstreams)


# ---- shrinking ---------------------------------------------------------------------


def test_reuse_shrinks_to_x0_plus_x0() -> None:
    program = smallest(op_graphs(ops=CORE), lambda p: any(
        s.op == "add" and s.args[0] == s.args[1] for s in p.steps))
    # The (1, 1) result is summed: roots are 0-d, as torch's sum gives.
    assert program.expression() == "x2 = x0 + x0; x3 = x2.sum()"
    assert [tuple(leaf.value.shape) for leaf in program.leaves] == [(1, 1), (1, 1)]


def test_shared_subgraph_shrinks_to_the_two_step_witness() -> None:
    def reused_result(p: Program) -> bool:
        names = {s.name for s in p.steps}
        return any(s.op == "add" and s.args[0] == s.args[1] and s.args[0] in names for s in p.steps)

    program = smallest(op_graphs(ops=["add"]), reused_result)
    assert program.expression() == "x2 = x0 + x0; x3 = x2 + x2"


def test_square_matmul_shrinks_to_a_2x2_matrix_times_itself() -> None:
    def square_self_product(p: Program) -> bool:
        return any(s.op == "matmul" and s.args[0] == s.args[1] and p.leaf(s.args[0]).value.shape == (2, 2)
                   for s in p.steps if s.args[0] in {leaf.name for leaf in p.leaves})

    program = smallest(op_graphs(ops=["matmul"]), square_self_product)
    assert program.steps[0].op == "matmul" and program.steps[0].args == ("x0", "x0")


# ---- options -------------------------------------------------------------------------


def test_programs_for_level_uses_that_level_and_below() -> None:
    for p in collect(programs_for_level("core"), 30):
        assert p.ops_used() <= set(CORE)
    with pytest.raises(ValueError, match="unknown level 'expert'"):
        programs_for_level("expert")
    assert LEVELS[-1] == "extensions"


def test_unknown_op_is_an_error() -> None:
    with pytest.raises(KeyError, match="unknown op 'softmax'"):
        collect(op_graphs(ops=["softmax"]), 1)


# ---- roots and focus ---------------------------------------------------------------------


def test_with_sum_allowed_every_root_is_0_d():
    for p in collect(op_graphs(ops=CORE), 60):
        assert p.upstream is None and p.run_torch().values[p.output].dim() == 0, p.expression()


@pytest.mark.parametrize("name", [n for n, spec in OPS.items() if spec.level == "extensions"])
def test_a_focus_op_is_always_on_a_path_to_the_output(name: str) -> None:
    strategy = op_graphs(ops=[name, "mul", "sum"], focus=name, integer_values=not OPS[name].transcendental)
    for p in collect(strategy, 15):
        assert reaches_output(p.steps, name), p.expression()


def test_a_focus_must_be_one_of_the_ops() -> None:
    with pytest.raises(ValueError, match="focus 'log' is not one of the ops"):
        collect(op_graphs(ops=["add"], focus="log"), 1)


def test_reaches_output_follows_the_path_back_from_the_last_step() -> None:
    from harness.program import Step

    steps = [Step("a", "log", ("x",)), Step("b", "mul", ("x", "x")), Step("y", "sum", ("b",))]
    assert not reaches_output(steps, "log")
    assert reaches_output(steps[:1], "log")
    assert reaches_output([*steps[:2], Step("c", "mul", ("a", "b")), Step("y", "sum", ("c",))], "log")
