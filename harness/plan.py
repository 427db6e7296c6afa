"""The plan of a grade: every check it will consider, in order (targeted checks, spec cases, properties).

The checks and the spec library import torch: so does planning, when it first runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from harness.errors import HarnessError
from harness.options import GradeOptions
from harness.vocabulary import LEVELS

if TYPE_CHECKING:
    from harness.checks.run import PlannedCheck

__all__ = ["planned_checks", "plan", "spec_paths"]


def plan(options: GradeOptions) -> list[PlannedCheck]:
    """``planned_checks``, with a spec author's error as the grader's one-line error."""
    from harness.specs import SpecError

    try:
        return planned_checks(options)
    except SpecError as exc:  # a spec author's folder: the same one-line error as `grade spec check`
        raise HarnessError(str(exc)) from None


def planned_checks(options: GradeOptions) -> list[PlannedCheck]:
    """Every check this grade will consider, in order: targeted checks, spec cases, properties."""
    import harness.checks.properties  # noqa: F401  -- registers the property checks
    import harness.checks.saved_tensors  # noqa: F401  -- registers the saved-tensor audit
    from harness.checks.run import PlannedCheck
    from harness.checks.targeted import CHECKS
    from harness.specs import load_cases

    plan = [PlannedCheck(c.id, c.level, c.concept, c.title, c.hint, c.requires, c.timeout, c.run, c.cost,
                         isolated=c.isolated) for c in CHECKS]
    for case in load_cases(spec_paths(options)):
        plan.append(PlannedCheck(
            f"spec:{case.id}", case.level, case.concepts[0], case.title, case.hint,
            frozenset(case.requirements), 30.0, _spec_runner(case), cost=0.01, isolated=False,
            graph=(case.program, case.expected),
        ))
    order = {level: i for i, level in enumerate(LEVELS)}
    plan.sort(key=lambda c: order[c.level])  # stable: declaration order inside a level
    if options.level != "all":
        plan = [c for c in plan if c.level == options.level]
    if options.levels:
        plan = [c for c in plan if c.level in options.levels]
    return plan


def spec_paths(options: GradeOptions) -> list[Path]:
    """The spec folders and files a grade with ``options`` loads."""
    from harness.specs import DEFAULT_SPECS_DIR

    return list(options.specs) if options.replace_specs else [DEFAULT_SPECS_DIR, *options.specs]


def _spec_runner(case: Any) -> Callable[[Any], None]:
    from harness.checks.context import DEFAULT_PARTS

    # A case about requires_grad also judges result flags and which gradients stay None;
    # every other case compares values and the gradients torch computes.
    parts = (*DEFAULT_PARTS, "requires_grad", "none") if "requires_grad" in case.concepts else DEFAULT_PARTS

    def run(ctx: Any) -> None:
        ctx.expect(case.program, parts=parts, tolerance=case.tolerance, hint=case.hint, expected=case.expected)

    return run
