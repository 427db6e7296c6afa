"""The plan of a grade: every check it will consider, in order (targeted checks, spec cases, properties).

The declared checks come from the registry (``checks.registry``), the spec cases compile into
the same ``Check`` (``specs.as_checks``); both import torch, when planning first runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.options import GradeOptions
from harness.vocabulary import LEVELS

if TYPE_CHECKING:
    from harness.checks.registry import Check

__all__ = ["planned_checks", "plan", "declared_checks", "spec_plan", "in_order", "spec_paths"]


def plan(options: GradeOptions) -> list[Check]:
    """``planned_checks``, with a spec author's error as the grader's one-line error."""
    return in_order(declared_checks(options) + spec_plan(options), options)


def planned_checks(options: GradeOptions) -> list[Check]:
    """Every check this grade will consider, in order: targeted checks, spec cases, properties."""
    from harness.checks.registry import registered
    from harness.specs.as_checks import spec_checks

    return in_order(registered() + spec_checks(spec_paths(options)), options)


def declared_checks(options: GradeOptions) -> list[Check]:
    """The checks declared in code this grade considers (no spec case): planned in no time."""
    from harness.checks.registry import registered

    return in_order(registered(), options)


def spec_plan(options: GradeOptions) -> list[Check]:
    """The spec cases this grade considers, as checks; a spec author's error is the grader's one-line error.
    Reading the library computes torch's outcome of every case: a grade runs its first checks meanwhile."""
    from harness.specs import SpecError
    from harness.specs.as_checks import spec_checks

    try:
        return in_order(spec_checks(spec_paths(options)), options)
    except SpecError as exc:  # a spec author's folder: the same one-line error as `grade spec check`
        raise HarnessError(str(exc)) from None


def in_order(checks: list[Check], options: GradeOptions) -> list[Check]:
    """``checks`` by level (in declaration order within one), keeping the levels ``options`` grade."""
    order = {level: i for i, level in enumerate(LEVELS)}
    checks = sorted(checks, key=lambda c: order[c.level])  # stable: declaration order inside a level
    if options.level != "all":
        checks = [c for c in checks if c.level == options.level]
    if options.levels:
        checks = [c for c in checks if c.level in options.levels]
    return checks


def spec_paths(options: GradeOptions) -> list[Path]:
    """The spec folders and files a grade with ``options`` loads."""
    from harness.specs import DEFAULT_SPECS_DIR

    return list(options.specs) if options.replace_specs else [DEFAULT_SPECS_DIR, *options.specs]
