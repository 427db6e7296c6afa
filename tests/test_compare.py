"""Comparisons with torch: per-element tolerance, dtypes, None-ness, shapes, and the 0-d convention."""

from __future__ import annotations

import torch

from harness.compare import DEFAULT_TOLERANCE, FLOAT32_TOLERANCE, Tolerance, as_zero_d, compare, dtype_mismatch


def _t(values, dtype=torch.float64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def test_the_tolerance_is_per_element_not_scaled_by_the_largest_element():
    # A large element elsewhere in the tensor does not loosen the bound of a small one.
    mismatch = compare(_t([1e8, 1.0]), _t([1e8, 0.0]), DEFAULT_TOLERANCE, "x.grad")
    assert mismatch is not None
    assert mismatch.message == ("x.grad differs in 1 of 2 element(s); worst at [1]: got 1, expected 0 "
                                "(rtol=1e-07, atol=1e-07)")
    assert (mismatch.index, mismatch.got, mismatch.expected) == ((1,), 1.0, 0.0)


def test_an_element_passes_within_atol_plus_rtol_times_its_expected_value():
    tol = Tolerance(rtol=1e-3, atol=1e-6)
    assert compare(_t([1000.0 + 0.9, 2e-7]), _t([1000.0, 0.0]), tol, "v") is None
    assert compare(_t([1000.0 + 1.1, 0.0]), _t([1000.0, 0.0]), tol, "v") is not None
    assert compare(_t([0.0, 2e-6]), _t([0.0, 0.0]), tol, "v") is not None


def test_none_and_shape_come_before_values():
    assert compare(None, _t([1.0]), DEFAULT_TOLERANCE, "a.grad").message == \
        "a.grad is None, expected a tensor of shape (1,)"
    assert compare(_t([0.0]), None, DEFAULT_TOLERANCE, "a.grad").message == \
        "a.grad should be None, got a tensor of shape (1,)"
    assert compare(_t(1.0), _t([1.0, 1.0]), Tolerance(1.0, 1.0), "a.grad").message == \
        "a.grad has shape (), expected (2,)"


def test_a_one_element_result_counts_as_0_d_only_where_torch_gives_0_d():
    assert as_zero_d(_t([3.0]), _t(3.0)).shape == ()
    assert as_zero_d(_t([[3.0]]), _t(3.0)).shape == ()
    assert as_zero_d(_t([3.0]), _t([3.0])).shape == (1,)  # torch's own shape: nothing to forgive
    assert as_zero_d(_t(3.0), _t([[3.0]])).shape == ()  # a 0-d gradient for a (1, 1) tensor is wrong
    assert as_zero_d(_t([3.0, 4.0]), _t(3.0)).shape == (2,)
    assert as_zero_d(None, _t(3.0)) is None


def test_a_gradient_has_its_tensors_dtype():
    assert dtype_mismatch("float64", "float64", "x.grad") is None
    assert dtype_mismatch("float32", "float32", "x.grad") is None
    mismatch = dtype_mismatch("int64", "float64", "x.grad")
    assert mismatch.kind == "dtype"
    assert mismatch.message == "x.grad has dtype int64, but its tensor holds float64: a gradient has its tensor's dtype"


def test_float32_tolerance_is_stated_once():
    assert FLOAT32_TOLERANCE.describe() == "rtol=1e-05, atol=1e-05"
