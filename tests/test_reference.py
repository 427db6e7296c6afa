"""Tests of the reference against torch autograd (float64 oracle).

The reference engine must score 100%: every op of the table, composed in
random graphs, matches torch; the follow-ups (deep graphs, memory release,
no_grad, in-place detection, numerics) hold as the contract states them.
"""

from __future__ import annotations

import dataclasses
import gc
import weakref

import pytest
import torch
from hypothesis import given

from harness.compare import DEFAULT_TOLERANCE, compare
from harness.ops import OPS
from harness.program import Outcome, Program
from harness.checks.strategies import op_graphs
from reference import Tensor, is_grad_enabled, no_grad

ALL_OPS = list(OPS)
OPS_WITHOUT_SUM = [name for name in OPS if name != "sum"]


def run_reference(program: Program) -> Outcome:
    """Run ``program`` on the reference engine in this process, as the worker would on a candidate."""
    leaves = {
        leaf.name: leaf.value if leaf.raw
        else Tensor(leaf.value.to(torch.float64).clone(), requires_grad=leaf.requires_grad)
        for leaf in program.leaves
    }
    values: dict = {}
    for _ in range(program.passes):
        values = dict(leaves)
        for step in program.steps:
            operands = [values[a] if isinstance(a, str) else a for a in step.args]
            values[step.name] = step.spec.apply_candidate(operands, step.param_dict())
        out = values[program.output]
        if out.requires_grad:
            out.backward(program.upstream)
    return Outcome(
        values={s.name: values[s.name].data for s in program.steps},
        requires_grad={s.name: values[s.name].requires_grad for s in program.steps},
        grads={leaf.name: None if leaf.raw else leaves[leaf.name].grad for leaf in program.leaves},
    )


def assert_matches_torch(program: Program) -> None:
    program.validate()
    got, expected = run_reference(program), program.run_torch()
    context = f"\n{program.expression()}"
    for name, value in expected.values.items():
        assert got.requires_grad[name] == expected.requires_grad[name], f"{name}.requires_grad{context}"
        mismatch = compare(got.values[name], value, DEFAULT_TOLERANCE, f"{name}.data")
        assert mismatch is None, mismatch.message + context
    for name, grad in expected.grads.items():
        mismatch = compare(got.grads[name], grad, DEFAULT_TOLERANCE, f"{name}.grad")
        assert mismatch is None, mismatch.message + context


# ---- the worked examples, by hand ----------------------------------------------


def test_matmul_relu_sum_worked_example() -> None:
    x = Tensor(torch.tensor([[1.0, 2.0]]), requires_grad=True)
    W = Tensor(torch.tensor([[1.0, -1.0], [0.5, -2.0]]), requires_grad=True)
    y = (x @ W).relu().sum()
    y.backward()
    # x @ W = [[2, -5]]: relu keeps the first column only.
    assert y.data.item() == 2.0
    assert torch.equal(x.grad, torch.tensor([[1.0, 0.5]]))
    assert torch.equal(W.grad, torch.tensor([[1.0, 0.0], [2.0, 0.0]]))


def test_reuse_accumulates_worked_example() -> None:
    a = Tensor(torch.tensor(3.0), requires_grad=True)
    b = a * a + a
    b.backward()
    assert b.data.item() == 12.0
    assert a.grad.item() == 7.0  # 2a + 1


# ---- random graphs over the whole table -------------------------------------------


@given(op_graphs(ops=ALL_OPS))
def test_random_graphs_match_torch(program: Program) -> None:
    assert_matches_torch(program)


@given(op_graphs(ops=ALL_OPS, broadcasting=True, numbers=True))
def test_random_graphs_with_broadcasting_and_numbers_match_torch(program: Program) -> None:
    assert_matches_torch(program)


@given(op_graphs(ops=ALL_OPS, integer_values=False))
def test_random_float_graphs_match_torch(program: Program) -> None:
    assert_matches_torch(program)


@given(op_graphs(ops=ALL_OPS, broadcasting=True))
def test_two_passes_accumulate_like_torch(program: Program) -> None:
    assert_matches_torch(dataclasses.replace(program, passes=2))


@given(op_graphs(ops=OPS_WITHOUT_SUM, broadcasting=True))
def test_upstream_gradients_match_torch(program: Program) -> None:
    assert_matches_torch(program)


# ---- deep graphs ---------------------------------------------------------------------


def test_million_node_chain_backward_has_no_recursion_error() -> None:
    x = Tensor(torch.zeros(1, dtype=torch.float64), requires_grad=True)
    y = x
    # Building is not under test: pausing the cycle collector only makes it faster.
    gc.disable()
    try:
        for _ in range(1_000_000):
            y = y + 1.0
    finally:
        gc.enable()
    y.backward(torch.ones(1, dtype=torch.float64))
    assert y.data.item() == 1_000_000.0
    assert torch.equal(x.grad, torch.ones(1, dtype=torch.float64))


# ---- memory release, second backward, no_grad --------------------------------------------


def test_intermediates_are_freed_after_backward_while_the_output_lives() -> None:
    x = Tensor(torch.randn(3, 4, dtype=torch.float64), requires_grad=True)
    w = Tensor(torch.randn(4, 5, dtype=torch.float64), requires_grad=True)
    h = x @ w
    t = h.tanh()
    y = (t * t).sum()
    h_data, t_data = weakref.ref(h.data), weakref.ref(t.data)
    del h, t
    # tanh and the product keep tanh's output for backward: it must still be alive here.
    assert t_data() is not None
    y.backward()
    # Freed by reference counting alone (no gc.collect): the graph holds no cycles.
    assert h_data() is None
    assert t_data() is None
    assert y.data.numel() == 1 and x.grad is not None


def test_dropped_intermediates_are_not_pinned_by_the_graph() -> None:
    x = Tensor(torch.randn(3, dtype=torch.float64), requires_grad=True)
    h = x * 2.0
    y = (h + 1.0).sum()
    intermediate = weakref.ref(h)
    del h
    # Nothing the backward rules read: neither the tensor nor its values stay alive.
    assert intermediate() is None
    y.backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0, dtype=torch.float64))


def test_second_backward_raises_a_clear_error() -> None:
    x = Tensor(torch.tensor([1.0, 2.0]), requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_no_grad_results_do_not_require_grad_or_reference_inputs() -> None:
    x = Tensor(torch.tensor([1.0, -2.0]), requires_grad=True)
    w = Tensor(torch.tensor([3.0, 4.0]), requires_grad=True)
    with no_grad():
        assert not is_grad_enabled()
        z = (x * w).relu() + 1.0
    assert is_grad_enabled()
    assert not z.requires_grad
    inputs = weakref.ref(x), weakref.ref(w)
    del x, w
    assert all(ref() is None for ref in inputs)
    assert torch.equal(z.data, torch.tensor([4.0, 1.0]))


def test_no_grad_is_restored_after_an_exception() -> None:
    with pytest.raises(ZeroDivisionError):
        with no_grad():
            1 / 0
    assert is_grad_enabled()


# ---- in-place mutation of saved tensors -------------------------------------------------


def test_in_place_change_of_a_saved_tensor_is_an_error() -> None:
    x = Tensor(torch.tensor([1.0, 2.0]), requires_grad=True)
    w = Tensor(torch.tensor([3.0, 4.0]), requires_grad=True)
    y = (x * w).sum()
    x.data.mul_(10)  # the mul rule saved x's values for w's gradient
    with pytest.raises(RuntimeError, match="modified in place after the forward pass"):
        y.backward()


def test_rebinding_data_between_forward_and_backward_is_fine() -> None:
    x = Tensor(torch.tensor([1.0, 2.0]), requires_grad=True)
    w = Tensor(torch.tensor([3.0, 4.0]), requires_grad=True)
    y = (x * w).sum()
    x.data = x.data * 10  # a new tensor: the saved one is untouched
    y.backward()
    # Gradients use the values the forward pass saw, as in PyTorch.
    assert torch.equal(w.grad, torch.tensor([1.0, 2.0]))
    assert torch.equal(x.grad, torch.tensor([3.0, 4.0]))


# ---- what the graph keeps alive -----------------------------------------------------


def _saved_tensors(root: Tensor) -> list[torch.Tensor]:
    """Every tensor saved by a node reachable from ``root`` (engine internals, on purpose)."""
    saved, stack, seen = [], [root._node], set()
    while stack:
        node = stack.pop()
        if node is None or not hasattr(node, "saved") or id(node) in seen:
            continue
        seen.add(id(node))
        saved.extend(node.saved)
        stack.extend(node.inputs)
    return saved


def test_linear_tanh_linear_pins_only_input_and_activation() -> None:
    x = Tensor(torch.randn(8, 4, dtype=torch.float64))
    w1 = Tensor(torch.randn(4, 6, dtype=torch.float64), requires_grad=True)
    w2 = Tensor(torch.randn(6, 3, dtype=torch.float64), requires_grad=True)
    h = x @ w1
    t = h.tanh()
    loss = (t @ w2).sum()
    pre_activation = weakref.ref(h.data)
    pinned = {id(s) for s in _saved_tensors(loss)}
    # dW1 = x^T G reads x; tanh' and dW2 read tanh's output; dt = G W2^T reads W2.
    assert pinned == {id(x.data), id(t.data), id(w2.data)}
    del h
    assert pre_activation() is None
    loss.backward()
    assert w1.grad.shape == (4, 6) and w2.grad.shape == (6, 3) and x.grad is None


# ---- numerics and shapes ----------------------------------------------------------------


def test_cross_entropy_is_finite_and_correct_for_huge_logits() -> None:
    logits = torch.tensor([[1e4, -1e4, 0.0], [-1e4, 1e4, 5e3], [3e3, 3e3, -1e4]], dtype=torch.float64)
    target = torch.tensor([0, 2, 1])
    z = Tensor(logits.clone(), requires_grad=True)
    loss = z.cross_entropy(target)
    loss.backward()
    expected_z = logits.clone().requires_grad_()
    expected = torch.nn.functional.cross_entropy(expected_z, target)
    expected.backward()
    assert torch.isfinite(loss.data).all() and torch.isfinite(z.grad).all()
    assert compare(loss.data, expected.detach(), DEFAULT_TOLERANCE, "loss") is None
    assert compare(z.grad, expected_z.grad, DEFAULT_TOLERANCE, "logits.grad") is None


def test_broadcast_bias_gradient_has_the_bias_shape() -> None:
    gen = torch.Generator().manual_seed(0)
    a, b, upstream = (torch.randn(shape, generator=gen, dtype=torch.float64) for shape in [(64, 128), (128,), (64, 128)])
    ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
    ((ta + tb) * tb).backward(upstream)
    ea, eb = a.clone().requires_grad_(), b.clone().requires_grad_()
    ((ea + eb) * eb).backward(upstream)
    assert ta.grad.shape == (64, 128) and tb.grad.shape == (128,)
    assert compare(ta.grad, ea.grad, DEFAULT_TOLERANCE, "a.grad") is None
    assert compare(tb.grad, eb.grad, DEFAULT_TOLERANCE, "b.grad") is None
