"""Grading one submission of a batch, whatever happens: every submission ends as a ``Graded``.

``grade_one`` never raises for a submission's sake: a file that cannot be read,
a folder without its entry file or a fault of the grader becomes a report with
status "error" and the reason as its message, so it still gets its row.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness import __version__
from harness.batch.collect import CollectedSubmission
from harness.errors import HarnessError
from harness.grade import GradeOptions, grade
from harness.vocabulary import LEVELS
from harness.preflight import MAX_SOURCE_BYTES, read_capped
from harness.report.model import Report
from harness.report.render import render_json, render_markdown
from harness.report.rubric import load_rubric
from harness.sandbox.launch import Sandbox, SandboxUnavailable

__all__ = ["Graded", "grade_one", "not_graded", "source_sha256", "read_source"]


@dataclass(frozen=True)
class Graded:
    """A finished submission: its report and its Markdown write-up, as written to ``results/``.

    The report is read back from its JSON (``Report.from_dict``): what a batch keeps, sends between
    machines and summarises is what its ``results/`` folder holds, whether graded now or resumed.
    """

    id: str
    report: Report
    markdown: str

    @classmethod
    def of(cls, id: str, report: Report) -> Graded:
        """A report made on this machine, read back from its JSON, with its write-up."""
        return cls(id, Report.from_dict(report.to_dict()), render_markdown(report) + "\n")

    def json(self) -> str:
        """The report as ``results/<id>.json`` holds it."""
        return render_json(self.report) + "\n"


def grade_one(sub: CollectedSubmission, options: GradeOptions, new_sandbox: Callable[[], Sandbox],
              on_sandbox: Callable[[Sandbox | None], None] = lambda sandbox: None) -> Graded:
    """Grade ``sub`` in a sandbox of its own from ``new_sandbox``.

    ``on_sandbox`` hears of the sandbox while it is in use (and of None after), so
    that an interrupted batch can close it under the grade.
    """
    started = time.perf_counter()
    if sub.problem or sub.path is None:
        report = not_graded(sub, options, sub.problem or "nothing to grade", started)
    else:
        sandbox = None
        try:
            sandbox = new_sandbox()
            on_sandbox(sandbox)
            report = grade(sub.path, options, sandbox)
        except HarnessError as exc:  # the file itself (not Python, unreadable): the candidate's row says why
            report = not_graded(sub, options, str(exc), started)
        except SandboxUnavailable as exc:
            report = not_graded(sub, options, f"the sandbox did not start: {exc}", started)
        except Exception as exc:  # a fault of the grader's: keep the batch going, say so in this row
            report = not_graded(sub, options, f"internal grader error: {type(exc).__name__}: {exc}", started)
        finally:
            if sandbox is not None:
                on_sandbox(None)
                sandbox.close()
    if report.file != sub.origin:
        report = dataclasses.replace(report, file=sub.origin)
    # Wall time from the batch's side, sandbox start included (timings are not part of the contract).
    wall = round(time.perf_counter() - started, 3)
    return Graded.of(sub.id, dataclasses.replace(report, timings={**report.timings, "wall": wall}))


def not_graded(sub: CollectedSubmission, options: GradeOptions, message: str, started: float) -> Report:
    """The report of a submission that could not be handed to the grader: status "error", no checks."""
    rubric = load_rubric(options.rubric)
    levels_used = LEVELS if options.level == "all" else (options.level,)
    levels = {level: {"score": 0.0, "max_score": rubric.levels.get(level, 0.0)} for level in levels_used}
    return Report(
        file=sub.origin, status="error", score=0.0, max_score=sum(v["max_score"] for v in levels.values()),
        levels=levels, checks=(), message=message, seed=options.seed,
        interview=rubric.interview(levels.get("core"), [], graded=False, needs_review=False),
        timings={"total": time.perf_counter() - started}, grader_version=__version__,
        source_sha256=source_sha256(sub.path), agreements=options.agreements.over(rubric.agreements).to_dict(),
        variant=options.variant,
        # nothing ran: the isolation the batch asked for, so that the cohort's rows agree
        isolation="sandbox" if options.isolation == "sandbox" else "basic",
    )


def source_sha256(path: Path | None) -> str:
    """The SHA-256 of a submission's file as the report records it, or "" when there is none."""
    data = read_source(path)
    return "" if data is None else hashlib.sha256(data).hexdigest()


def read_source(path: Path | None) -> bytes | None:
    """A submission's bytes for the batch's own use (hash, similarity, a remote worker), or None when it
    is not a regular file under the size cap: never a link followed, never more than the cap read."""
    if path is None:
        return None
    try:
        return read_capped(Path(path), MAX_SOURCE_BYTES, follow_links=False)
    except HarnessError:
        return None
