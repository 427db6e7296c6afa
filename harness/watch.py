"""Grading one file again on every save (``grade FILE --watch``): the core level first, then the rest.

The core level's report is shown about a second after a save; the follow-ups and
extensions follow in a sandbox of their own, and the two halves make one report,
diagnosed again over all its checks, as a plain grade of the same file reads.
The next save's sandbox is opened while the candidate edits.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable

from harness.grade import GradeOptions, grade_scanned, planned_checks, preflight, sandbox_limits, scanned
from harness.report.model import Report, combine
from harness.sandbox.launch import Launcher, Sandbox

__all__ = ["Watch", "rediagnose"]

REST = ("followups", "extensions")
"""The levels graded after the core level, in one grade."""


class Watch:
    """Grades one file again and again, each time in a fresh sandbox forked from ``launcher`` (which stays the caller's)."""

    def __init__(self, launcher: Launcher, options: GradeOptions) -> None:
        self.launcher = launcher
        self.options = options
        self.limits = sandbox_limits(options)
        self._spare: Sandbox | None = None

    def grade(self, path: Path, core_graded: Callable[[Report], None] = lambda report: None) -> Report:
        """The file at ``path`` graded now; ``core_graded`` hears the core level's report first, when it has one.

        Raises HarnessError for a file that is not Python at all.
        """
        options = self.options
        early = preflight(path, options)
        if isinstance(early, Report):
            return early
        early = scanned(early, options.variant)  # once for both halves: the variant is theirs alike
        box, self._spare = self._spare or self.launcher.sandbox(self.limits), None
        try:
            if options.level != "all":
                return grade_scanned(early, options, box)
            core = grade_scanned(early, dataclasses.replace(options, level="core"), box)
            core_graded(core)
            rest = grade_scanned(early, dataclasses.replace(options, levels=REST), self.launcher)
            return rediagnose(combine(core, rest), options)
        finally:
            box.close()

    def prepare(self) -> None:
        """Open the next grade's sandbox now, while the candidate edits: a save is graded the moment it lands."""
        if self._spare is None:
            self._spare = self.launcher.sandbox(self.limits)

    def close(self) -> None:
        if self._spare is not None:
            self._spare.close()
            self._spare = None

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def rediagnose(report: Report, options: GradeOptions) -> Report:
    """The report's root causes diagnosed again over all its checks at once.

    Diagnosing the core level and the rest apart would group and order the causes
    differently from a plain grade of the same file.
    """
    from harness.diagnosis.causes import diagnose_safely

    if report.status != "graded" or not report.checks:
        return report
    plan = planned_checks(dataclasses.replace(options, level="all", levels=()))
    graphs = {c.id: c.graph for c in plan if c.graph is not None}
    points = {c.id: c.max_points for c in report.checks}
    checks, causes, failure = diagnose_safely(list(report.checks), report.integrity_violations, points, graphs)
    return dataclasses.replace(report, checks=tuple(checks), root_causes=causes, diagnosis_error=failure)
