"""Is it an engine at all: the finite-difference signatures, judged from numbers checked by hand."""

import random

import pytest
import torch

from harness.integrity.scan import ReviewEntry
from harness.checks.probes import draw_cost_graphs, draw_smooth_graphs, judge_accuracy, judge_backward_cost
from harness.program import Leaf, Program, Step

SMOOTH_GRAPH = Program(
    (Leaf("x", torch.rand(3, 4, generator=torch.Generator().manual_seed(8), dtype=torch.float64) + 0.5),
     Leaf("w", torch.rand(4, 2, generator=torch.Generator().manual_seed(9), dtype=torch.float64) + 0.5),
     Leaf("b", torch.rand(3, 2, generator=torch.Generator().manual_seed(10), dtype=torch.float64) + 0.5)),
    (Step("h", "matmul", ("x", "w")), Step("k", "mul", ("h", "b")), Step("m", "mul", ("k", "h")),
     Step("y", "sum", ("m",))),
    "y",
)


@pytest.mark.parametrize("facts", [
    {"sizes": [4, 64], "calls": [17, 17], "elements": [124, 1564]},  # the reference engine
    {"sizes": [4, 64], "calls": [13, 14], "elements": [136, 1756]},
    {"sizes": [4, 64], "calls": [0, 0], "elements": [0, 0]},  # a guard switched off: says nothing
])
def test_an_engine_does_the_same_calls_whatever_the_size(facts):
    assert judge_backward_cost(facts, 10) is None


def test_calls_growing_with_the_input_are_finite_differences():
    entry = judge_backward_cost({"sizes": [4, 64], "calls": [765, 9045], "elements": [4551, 825711]}, 56)
    # 9045 / 765 = 11.82
    assert entry == ReviewEntry(56, "backward()", (
        "backward made 9045 torch calls for 64 input rows against 765 for 4 (11.8x the calls for 16x the input, same "
        "graph): it re-evaluates the forward pass for every input element (finite differences), which is not an "
        "engine"))


def test_work_growing_with_the_square_of_the_input_is_batched_finite_differences():
    entry = judge_backward_cost({"sizes": [4, 64], "calls": [78, 78], "elements": [6306, 1126086]}, 45)
    # 1126086 / 6306 = 178.6, more than 4 x 16
    assert entry == ReviewEntry(45, "backward()", (
        "backward computed 1126086 tensor elements for 64 input rows against 6306 for 4 (179x the work for 16x the "
        "input, same graph): the work grows with the square of the input, as when every input element is perturbed "
        "at once (finite differences)"))


@pytest.mark.parametrize("facts", [
    None, "lots", {"error": {"type": "RuntimeError"}}, {"sizes": [4], "calls": [1], "elements": [1]},
    {"sizes": [64, 4], "calls": [10, 1000], "elements": [1, 1]}, {"sizes": [4, 64], "calls": [1, -5], "elements": [1, 1]},
    {"sizes": [4, 64], "calls": ["1", "900"], "elements": [1, 1]},
])
def test_a_probe_that_failed_or_lies_badly_proves_nothing(facts):
    assert judge_backward_cost(facts, 1) is None


def _expected():
    return SMOOTH_GRAPH.run_torch().grads


def test_gradients_exact_to_rounding_are_an_engine():
    exact = _expected()
    assert judge_accuracy(exact, exact, 3) is None
    nudged = {name: g * (1 + 1e-14) for name, g in exact.items()}
    assert judge_accuracy(nudged, exact, 3) is None


def test_gradients_right_only_to_finite_difference_accuracy_are_flagged():
    exact = _expected()
    approximate = {name: g * (1 + 2e-9) for name, g in exact.items()}
    entry = judge_accuracy(approximate, exact, 7, SMOOTH_GRAPH)
    assert entry == ReviewEntry(7, "backward()", (
        "gradients match torch only to 2.0e-09 relative on a smooth float64 graph (h = x @ w; k = h * b; m = k * h; "
        "y = m.sum()); rules applied exactly agree to about 1e-15, finite differences to about 1e-6..1e-10"))


def test_wrong_or_missing_gradients_are_for_the_checks_to_report():
    exact = _expected()
    assert judge_accuracy({name: 2 * g for name, g in exact.items()}, exact, 1) is None
    assert judge_accuracy({**exact, "x": None}, exact, 1) is None
    assert judge_accuracy({**exact, "x": exact["x"].reshape(-1)}, exact, 1) is None
    assert judge_accuracy({**exact, "x": exact["x"] * float("nan")}, exact, 1) is None


def test_the_smooth_graph_has_no_cancellation():
    """Positive values everywhere: relative errors are meaningful and exact rules agree to a few ulps."""
    assert all(bool((leaf.value > 0).all()) for leaf in SMOOTH_GRAPH.leaves)
    assert all(bool((g > 0).all()) for g in _expected().values() if isinstance(g, torch.Tensor))


def test_python_calls_growing_with_the_input_are_a_per_element_loop():
    """Complex step in numpy makes few torch calls: its Python loop over the input elements gives it away."""
    facts = {"sizes": [3, 45], "calls": [20, 22], "elements": [90, 1300], "py_calls": [120, 1680]}
    entry = judge_backward_cost(facts, 81)
    assert entry is not None and entry.why.startswith(
        "backward made 1680 Python calls for 45 input rows against 120 for 3 (14.0x the calls for 15x the input")


def test_complex_numbers_in_backward_are_complex_step():
    facts = {"sizes": [3, 45], "calls": [20, 20], "elements": [90, 1300], "py_calls": [5, 5], "complex": True}
    assert judge_backward_cost(facts, 75).why.startswith("backward computed complex numbers")


def test_every_pair_is_judged():
    engine, differences = ([3, 45], [20, 20], [90, 1300]), ([4, 64], [765, 9045], [4551, 825711])
    facts = {k: engine[i] + differences[i] for i, k in enumerate(("sizes", "calls", "elements"))}
    assert judge_backward_cost(facts, 5).why.startswith("backward made 9045 torch calls for 64 input rows")


def test_the_probe_graphs_are_drawn_per_grade():
    """Different draws give different graphs (structure, shapes, values); each pair shares its structure."""
    first, second = draw_cost_graphs(random.Random(1)), draw_cost_graphs(random.Random(2))
    assert len(first) == 2 and [p.expression() for pair in first for p in pair] != \
        [p.expression() for pair in second for p in pair] or first[0][0].leaf("x").value.shape != \
        second[0][0].leaf("x").value.shape
    for small, large in first:
        assert small.expression() == large.expression()
        assert 20 * small.leaf("x").value.shape[0] <= large.leaf("x").value.shape[0]
    drawn = {draw_smooth_graphs(random.Random(seed), 1)[0].expression() for seed in range(20)}
    assert len(drawn) > 5
    for graph in draw_smooth_graphs(random.Random(3), 4):
        assert all(bool((leaf.value >= 0.5).all()) for leaf in graph.leaves)


def test_a_leaf_the_drawn_graph_does_not_use_is_left_out_of_the_comparison():
    exact = _expected()
    approximate = {name: g * (1 + 2e-9) for name, g in exact.items()}
    unused = {**exact, "b": None}
    assert judge_accuracy({**approximate, "b": None}, unused, 2) is not None
    assert judge_accuracy({**exact, "b": None}, unused, 2) is None
    assert judge_accuracy({}, {"b": None}, 2) is None
