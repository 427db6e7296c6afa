"""Grading one file again on every save (``grade FILE --watch``): one grade per save, the core level first.

Each save is graded once, in a sandbox opened while the candidate edited: the core level's
checks run first, and their report (scored and diagnosed as the core level alone) is handed
to the caller the moment they are in, while the follow-ups and extensions run; the grade's
own report, the same as a plain grade of the file, comes last.
"""

from __future__ import annotations

from pathlib import Path

from harness.grade import CoreGraded, GradeOptions, grade_submission, preflight, sandbox_limits
from harness.report.model import Report
from harness.sandbox.launch import Launcher, Sandbox

__all__ = ["Watch"]


class Watch:
    """Grades one file again and again, each time in a fresh sandbox forked from ``launcher`` (which stays the caller's)."""

    def __init__(self, launcher: Launcher, options: GradeOptions) -> None:
        self.launcher = launcher
        self.options = options
        self.limits = sandbox_limits(options)
        self._spare: Sandbox | None = None

    def grade(self, path: Path, core_graded: CoreGraded | None = None) -> Report:
        """The file at ``path`` graded now; ``core_graded`` hears the core level's report first, when every level
        is graded and the submission got as far as running its checks.

        Raises HarnessError for a file that is not Python at all.
        """
        early = preflight(path, self.options)
        if isinstance(early, Report):
            return early
        box, self._spare = self._spare or self.launcher.sandbox(self.limits), None
        try:
            return grade_submission(early, self.options, box, core_graded=core_graded)
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
