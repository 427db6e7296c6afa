"""Comparing what a candidate produced with what torch expects.

Shape, dtype and None-ness are checked before values: ``torch.allclose``
broadcasts, so a ``()``-shaped gradient would otherwise "equal" a ``(3,)`` one.
Values are compared in float64, element by element, with a relative *and* an
absolute tolerance (``|got - expected| <= atol + rtol * |expected|``); the worst
element is reported.

``as_zero_d`` is the one shape convention the comparisons forgive: a one-element
result of shape ``(1,)`` where torch gives a 0-d tensor. One check
(``core.conventions``) charges it; every other check compares past it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from harness.lazy_modules import lazy_module

torch = lazy_module("torch", globals())

__all__ = ["Tolerance", "DEFAULT_TOLERANCE", "tolerance_for", "looser", "Mismatch", "compare", "as_zero_d",
           "dtype_mismatch", "unravel"]


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    """Per element: ``|got - expected| <= atol + rtol * |expected|``."""

    def describe(self) -> str:
        return f"rtol={self.rtol:g}, atol={self.atol:g}"


# The one place the default tolerances are stated.
DEFAULT_TOLERANCE: Final = Tolerance(rtol=1e-7, atol=1e-7)
FLOAT32_TOLERANCE: Final = Tolerance(rtol=1e-5, atol=1e-5)
FLOAT32_TRANSCENDENTAL_TOLERANCE: Final = Tolerance(rtol=1e-4, atol=1e-5)


def tolerance_for(dtype: torch.dtype | str, transcendental: bool) -> Tolerance:
    name = str(dtype).removeprefix("torch.")
    if name == "float32":
        return FLOAT32_TRANSCENDENTAL_TOLERANCE if transcendental else FLOAT32_TOLERANCE
    return DEFAULT_TOLERANCE


def looser(a: Tolerance, b: Tolerance) -> Tolerance:
    """The tolerance that accepts what either accepts."""
    return Tolerance(max(a.rtol, b.rtol), max(a.atol, b.atol))


@dataclass(frozen=True)
class Mismatch:
    """Why ``got`` is not ``expected``: a kind, a sentence, and the worst element if values differ."""

    kind: str  # "none", "not_none", "type", "shape", "dtype", "values", "nonfinite"
    message: str
    index: tuple[int, ...] | None = None
    got: float | None = None
    expected: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def compare(got: torch.Tensor | None, expected: torch.Tensor | None, tol: Tolerance, what: str) -> Mismatch | None:
    """None when ``got`` matches ``expected``; otherwise the first thing that differs."""
    if expected is None:
        if got is None:
            return None
        return Mismatch("not_none", f"{what} should be None, got a tensor of shape {_shape(got)}")
    if got is None:
        return Mismatch("none", f"{what} is None, expected a tensor of shape {_shape(expected)}")
    if tuple(got.shape) != tuple(expected.shape):
        return Mismatch("shape", f"{what} has shape {_shape(got)}, expected {_shape(expected)}")
    g = got.to(torch.float64)
    e = expected.to(torch.float64)
    if g.numel() == 0:
        return None
    bound = tol.atol + tol.rtol * e.abs()
    same_nonfinite = (~torch.isfinite(e)) & (g == e)
    err = (g - e).abs()
    bad = ~((err <= bound) | same_nonfinite)
    if not bool(bad.any()):
        return None
    # Report the element that is furthest outside its bound (NaN counts as worst).
    excess = torch.where(torch.isnan(err), torch.full_like(err, float("inf")), err - bound)
    excess = torch.where(bad, excess, torch.full_like(err, float("-inf")))
    flat = int(torch.argmax(excess.reshape(-1)))
    index = unravel(flat, tuple(e.shape))
    got_v, exp_v = float(g.reshape(-1)[flat]), float(e.reshape(-1)[flat])
    count = int(bad.sum())
    where = f" at {list(index)}" if index else ""
    kind = "nonfinite" if not torch.isfinite(g.reshape(-1)[flat]) else "values"
    return Mismatch(
        kind,
        f"{what} differs in {count} of {e.numel()} element(s); worst{where}: got {got_v:.10g}, "
        f"expected {exp_v:.10g} ({tol.describe()})",
        index,
        got_v,
        exp_v,
    )


def same_values(a: torch.Tensor, b: torch.Tensor, rtol: float, atol: float) -> bool:
    """Whether ``a`` agrees with ``b`` element by element: same shape, non-finite where ``b`` is, and
    ``|a - b| <= atol * max(1, max|b|) + rtol * |b|`` elsewhere (the diagnosis's looser sameness)."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    x, y = a.to(torch.float64), b.to(torch.float64)
    finite_x, finite_y = torch.isfinite(x), torch.isfinite(y)
    if not torch.equal(finite_x, finite_y):
        return False
    x, y = x[finite_x], y[finite_y]
    if x.numel() == 0:
        return True
    scale = max(1.0, float(y.abs().max()))
    return bool(((x - y).abs() <= atol * scale + rtol * y.abs()).all())


def unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The index of element ``flat`` of a tensor of ``shape`` (``torch.unravel_index`` would import sympy)."""
    index = []
    for size in reversed(shape):
        flat, position = divmod(flat, size)
        index.append(position)
    return tuple(reversed(index))


def as_zero_d(got: torch.Tensor | None, expected: torch.Tensor | None) -> torch.Tensor | None:
    """``got`` as a 0-d tensor when torch expects 0-d and ``got`` holds one element in size-1 axes.

    ``(1,)`` for a 0-d result is a convention, not a wrong answer: charged once, by
    ``core.conventions``, and compared past everywhere else.
    """
    if (isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor) and expected.dim() == 0
            and got.dim() > 0 and all(size == 1 for size in got.shape)):
        return got.reshape(())
    return got


def dtype_mismatch(got: str, tensor: str, what: str) -> Mismatch | None:
    """A gradient's dtype must be its tensor's: ``got`` and ``tensor`` are dtype names (``float64``)."""
    if got == tensor:
        return None
    return Mismatch("dtype", f"{what} has dtype {got}, but its tensor holds {tensor}: a gradient has its tensor's "
                             "dtype")


def _shape(t: torch.Tensor) -> str:
    dims = tuple(t.shape)
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"
