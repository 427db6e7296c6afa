"""Verdicts: each check compares only the parts it is about, and compares past the conventions."""

from __future__ import annotations

from typing import Any

import torch

from harness.checks.context import DEFAULT_PARTS, Observation, judge, scalar_root
from harness.program import Leaf, Program, Step, encode_tensor

X = torch.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=torch.float64)
W = torch.tensor([[2.0, 1.0], [-1.0, 4.0]], dtype=torch.float64)

# y = (x * w).sum() with u unused: torch gives x and w gradients, u None; c does not require grad.
PROGRAM = Program((Leaf("x", X), Leaf("w", W), Leaf("u", X), Leaf("c", W, requires_grad=False)),
                  (Step("p", "mul", ("x", "w")), Step("y", "sum", ("p",))), "y")
EXPECTED = PROGRAM.run_torch()


def _wire(t: torch.Tensor | None, **extra: Any) -> dict[str, Any] | None:
    return None if t is None else {**encode_tensor(t), **extra}


def _observe(values: dict[str, Any] | None = None, grads: dict[str, Any] | None = None,
             data_dtype: str = "float64", **wire_extra: Any) -> Observation:
    """An observation whose values and grads default to torch's own, as the worker would send them."""
    values = {**EXPECTED.values, **(values or {})}
    grads = {**EXPECTED.grads, **(grads or {})}
    raw = {"values": {k: _wire(v, **wire_extra) for k, v in values.items()},
           "grads": {k: _wire(v, **wire_extra) for k, v in grads.items()},
           "leaf_data": {leaf.name: {**encode_tensor(leaf.value), "dtype": data_dtype} for leaf in PROGRAM.leaves}}
    decoded = {k: None if v is None else v.to(torch.float64) for k, v in grads.items()}
    return Observation({k: v.to(torch.float64) for k, v in values.items()}, {}, decoded, {}, None, 0.0, raw)


def test_torchs_own_outcome_passes_every_part():
    parts = ("error", "values", "grads", "grad_types", "none", "dtypes")
    assert judge(PROGRAM, _observe(), EXPECTED, parts) is None


def test_zeros_for_a_leaf_torch_leaves_none_are_judged_only_by_the_none_part():
    obs = _observe(grads={"u": torch.zeros_like(X), "c": torch.zeros_like(W)})
    assert judge(PROGRAM, obs, EXPECTED, DEFAULT_PARTS) is None
    assert judge(PROGRAM, obs, EXPECTED, ("error", "grad_types")) is None
    verdict = judge(PROGRAM, obs, EXPECTED, ("error", "none"))
    assert verdict.message == "u.grad should be None, got a tensor of shape (2, 2)"


def test_the_none_part_also_wants_a_tensor_where_torch_has_one():
    verdict = judge(PROGRAM, _observe(grads={"w": None}), EXPECTED, ("error", "none"))
    assert verdict.message == "w.grad is None, expected a tensor of shape (2, 2)"


def test_a_one_element_result_of_shape_1_is_compared_as_0_d():
    obs = _observe(values={"y": EXPECTED.values["y"].reshape(1)})
    assert judge(PROGRAM, obs, EXPECTED, DEFAULT_PARTS) is None


def test_float32_results_get_the_float32_tolerance():
    nudged = EXPECTED.values["p"] * (1 + 1e-6)
    assert judge(PROGRAM, _observe(values={"p": nudged}), EXPECTED, DEFAULT_PARTS) is not None
    assert judge(PROGRAM, _observe(values={"p": nudged.float()}, dtype="float32"), EXPECTED, DEFAULT_PARTS) is None


def test_a_gradient_of_another_dtype_than_its_tensor_is_judged_by_the_dtypes_part_only():
    obs = _observe(grads={"x": EXPECTED.grads["x"].long()})
    assert judge(PROGRAM, obs, EXPECTED, DEFAULT_PARTS) is None
    verdict = judge(PROGRAM, obs, EXPECTED, ("error", "grad_types", "dtypes"))
    assert verdict.message == "x.grad has dtype int64, but its tensor holds float64: a gradient has its tensor's dtype"
    # Float32 storage keeps float32 gradients consistent with their tensors: no dtype verdict.
    single = _observe(grads={k: v.float() for k, v in EXPECTED.grads.items() if v is not None}, data_dtype="float32")
    assert judge(PROGRAM, single, EXPECTED, ("error", "grad_types", "dtypes")) is None


def test_a_float_gradient_of_another_float_dtype_loses_no_values_and_passes_the_dtypes_part():
    # float32 gradients on float64 data: a convention (core.conventions notes it once), not a lost value.
    obs = _observe(grads={k: v.float() for k, v in EXPECTED.grads.items() if v is not None}, dtype="float32")
    assert judge(PROGRAM, obs, EXPECTED, ("error", "grad_types", "dtypes")) is None


def test_a_subclass_is_refused_for_data_as_for_grad():
    obs = _observe(subclass="Sneaky")
    assert judge(PROGRAM, obs, EXPECTED, ("error", "values")).message == \
        "p.data is a Sneaky, expected a plain torch.Tensor"
    assert judge(PROGRAM, obs, EXPECTED, ("error", "grads")).message == \
        "x.grad is a Sneaky, expected a plain torch.Tensor"


def test_a_one_element_output_that_is_not_0_d_is_backpropagated_from_its_sum():
    row = Program((Leaf("r", torch.ones(1, 2, dtype=torch.float64)), Leaf("k", torch.ones(2, 1, dtype=torch.float64))),
                  (Step("h", "matmul", ("r", "k")),), "h")
    rooted = scalar_root(row, row.run_torch())
    assert rooted.expression() == "h = r @ k; h_sum = h.sum()"
    assert rooted.output == "h_sum"
    assert scalar_root(PROGRAM, EXPECTED) is PROGRAM


# ---- the timeout budget -----------------------------------------------------------------------------


class _Sandbox:
    def __init__(self) -> None:
        self.killed: list[int] = []

    def kill_worker(self, number: int) -> None:
        self.killed.append(number)


class _Worker:
    def __init__(self, sandbox: _Sandbox, number: int) -> None:
        self.sandbox, self.number = sandbox, number


def test_the_timeout_that_spends_the_budget_stops_the_requests_still_running():
    from harness.checks.context import Shared

    sandbox = _Sandbox()
    shared = Shared(deadline=float("inf"))
    with shared.running(_Worker(sandbox, 3)):
        pass  # finished before the budget ran out: not stopped
    with shared.running(_Worker(sandbox, 1)), shared.running(_Worker(sandbox, 2)):
        shared.add_timeout(Shared.TIMEOUT_BUDGET / 2)
        assert sandbox.killed == [] and shared.why_skip() is None
        shared.add_timeout(Shared.TIMEOUT_BUDGET / 2)
        assert sorted(sandbox.killed) == [1, 2] and shared.why_skip()
        shared.add_timeout(1.0)  # already spent: nothing is stopped twice
        assert sorted(sandbox.killed) == [1, 2]
    assert shared.busy == set()


class _Printed:
    def __init__(self, text: str) -> None:
        self.text, self.read = text, 0

    def output(self) -> dict[str, str]:
        self.read += 1
        return {"stdout": self.text, "stderr": ""}


def test_retired_workers_output_is_read_once_in_the_order_they_were_retired():
    from harness.checks.context import Shared

    shared = Shared(deadline=float("inf"))
    first, second = _Printed("first\n"), _Printed("second\n")
    shared.retired(first)
    shared.retired(second)
    assert (first.read, second.read) == (0, 0)  # nothing waits for a killed worker's pipes meanwhile
    assert shared.output == {"stdout": "first\nsecond\n", "stderr": ""}
    assert shared.output["stdout"] == "first\nsecond\n" and (first.read, second.read) == (1, 1)
