"""Spec cases as checks: every case compiles into the same ``Check`` the declared checks are.

A case runs its one program and judges it against torch: its values and the gradients torch
computes, and for a case about requires_grad also the results' flags and which gradients stay
None. Cases share a worker (``isolated=False``): they are plain graph runs, and starting a worker
per case would cost more than the cases themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable

from harness.checks.context import DEFAULT_PARTS
from harness.checks.registry import Check
from harness.specs.format import SpecCase
from harness.specs.loader import load_cases

__all__ = ["as_check", "spec_checks"]

TIMEOUT = 30.0
"""Seconds for one case: far more than a graph of a few nodes needs."""


def spec_checks(paths: Iterable[str | Path]) -> list[Check]:
    """A check for every case under ``paths``, in the library's order."""
    return [as_check(case) for case in load_cases(paths)]


def as_check(case: SpecCase) -> Check:
    return Check(f"spec:{case.id}", case.level, case.concepts[0], case.title, case.hint,
                 frozenset(case.requirements), TIMEOUT, _runner(case), cost=0.01, isolated=False,
                 graph=(case.program, case.expected), hidden=case.hidden)


def _runner(case: SpecCase) -> Callable[[Any], None]:
    parts = (*DEFAULT_PARTS, "requires_grad", "none") if "requires_grad" in case.concepts else DEFAULT_PARTS

    def run(ctx: Any) -> None:
        ctx.expect(case.program, parts=parts, tolerance=case.tolerance, hint=case.hint, expected=case.expected)

    return run
