"""Grading one submission: the stages composed, from a file to a ``Report``.

preflight (the source alone) -> the static scan -> the plan (targeted checks, spec cases,
properties) -> the checks run in the submission's sandbox (``checks.run``) -> the diagnosis
-> the score (``report.score``) -> a frozen Report that the renderers turn into text, JSON
or Markdown.
"""

from __future__ import annotations

import ast
import dataclasses
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from harness import __version__
from harness.agreements import Agreements
from harness.errors import HarnessError
from harness.integrity.scan import Findings, inspect_source
from harness.integrity.use import runs_at_import, settle
from harness.options import GradeOptions
from harness.plan import declared_checks, in_order, planned_checks, spec_paths, spec_plan
from harness.preflight import Submission, Unrunnable, read_submission
from harness.protection import protect_grader
from harness.stubs import stub_members
from harness.report.model import CheckResult, Report, RootCause
from harness.report.rubric import Rubric, load_rubric
from harness.report.score import allot, score
from harness.sandbox.launch import Launcher, Limits, Sandbox, SandboxUnavailable, bubblewrap_missing
from harness.sandbox.opening import Opening
from harness.variants import VARIANTS, kept, kept_review, not_credited
from harness.vocabulary import FAILING, LEVELS

if TYPE_CHECKING:  # imported when a grade runs: they import torch
    from harness.checks.context import Shared
    from harness.checks.registry import Check

__all__ = ["GradeOptions", "grade", "grade_submission", "grade_scanned", "scanned", "preflight", "planned_checks",
           "protect_grader", "spec_paths"]


def grade(path: Path, options: GradeOptions, sandbox: Launcher | Sandbox) -> Report:
    """Grade the submission file at ``path``: ``preflight``, then ``grade_submission`` unless the source decided."""
    early = preflight(path, options, isolation=_isolation_of(sandbox))
    return early if isinstance(early, Report) else grade_submission(early, options, sandbox)


CoreGraded = Callable[[Report], None]
"""Hears the core level's report of a grade of every level, as soon as its checks are in."""


def grade_submission(submission: Submission, options: GradeOptions, sandbox: Launcher | Sandbox, *,
                     core_graded: CoreGraded | None = None) -> Report:
    """Grade a submission ``preflight`` has read. Raises HarnessError for bad input to the grader itself.

    ``sandbox`` is where the submission runs: a ``Sandbox`` the caller opened for it (and
    closes), or the ``Launcher`` to open one from, once the grader's own imports are done
    (its template imports torch meanwhile); that one is closed when the grade ends.
    With ``core_graded`` (and every level graded), the core level's checks run first and
    ``core_graded`` hears their report (scored and diagnosed as a grade of the core level
    alone would be) while the other levels run: ``--watch`` shows it first.
    """
    _check_options(options)
    return grade_scanned(scanned(submission, options.variant), options, sandbox, core_graded=core_graded)


def grade_scanned(submission: Submission, options: GradeOptions, sandbox: Launcher | Sandbox, *,
                  core_graded: CoreGraded | None = None) -> Report:
    """``grade_submission`` of a submission ``scanned`` already, with options ``preflight`` checked."""
    started = time.perf_counter()
    if submission.class_name:  # preflight picked the file's one engine class: it is the one graded
        options = dataclasses.replace(options, class_name=submission.class_name)
    rubric = load_rubric(options.rubric)
    limits = sandbox_limits(options)
    decided = bool(submission.findings.violations) and runs_at_import(submission.text, submission.findings)
    # The sandbox opens while the grader imports and plans; the submission runs only once both are done.
    opening = None if decided else Opening(sandbox, limits)
    try:
        protect_grader()
        declared = declared_checks(options)  # the spec cases are planned while the first checks run
    except BaseException:
        if opening is not None:
            opening.close()
        raise
    if opening is None:
        # Proof from the source alone, on a line that runs at import: nothing is run, every check is skipped.
        # (A violation inside functions only is proof once one of them runs: the grade goes on and looks.)
        return _skipped_for_violation(_Grading(options, rubric, submission, _isolation_of(sandbox)),
                                      in_order(declared + spec_plan(options), options), started)
    try:
        box = opening.result()
    except SandboxUnavailable as exc:
        opening.close()
        raise HarnessError(str(exc)) from None
    # The watchdog: past the time limit the submission's sandbox is killed, whatever runs.
    fired = threading.Event()

    def stop_submission() -> None:
        fired.set()
        box.abort()

    watchdog = threading.Timer(max(0.0, options.time_limit - (time.perf_counter() - started)), stop_submission)
    watchdog.daemon = True
    watchdog.start()
    try:
        timings = {"setup": time.perf_counter() - started}
        report = _run(_Grading(options, rubric, submission, box.isolation, box.isolation_note), declared, box,
                      started, timings, core_graded if options.level == "all" and not options.levels else None)
    finally:
        watchdog.cancel()
        opening.close()  # what the grade opened itself; never raises: clean-up never changes a verdict
    if fired.is_set() and report.status != "integrity_violation":
        report = dataclasses.replace(report, status="timeout", message=(
            f"the grade ran past its time limit of {options.time_limit:g} s and the submission was stopped; "
            "the checks that finished are listed"))
    return report


def preflight(path: Path, options: GradeOptions, *, isolation: str | None = None) -> Report | Submission:
    """Read and parse the submission without running it, in milliseconds and without torch.

    Returns the final Report when the source alone decides the grade (a syntax error, an
    empty file; ``isolation`` is the one it reports, by default the one this machine
    gives), else the Submission, read once for ``grade_submission``. Raises HarnessError
    for a file that is not Python at all.
    """
    _check_options(options)
    try:
        return read_submission(path, options.class_name, follow_links=options.follow_links,
                               pick_class=options.pick_class)
    except Unrunnable as exc:
        unread = Submission(Path(path), "", exc.sha256, Findings())
        return _Grading(options, load_rubric(options.rubric), unread, isolation or _isolation_of(None)).report(
            "error", exc.message, [], {}, {})


def _check_options(options: GradeOptions) -> None:
    if options.level not in (*LEVELS, "all"):
        raise HarnessError(f"unknown level {options.level!r} (choose from {', '.join(LEVELS)}, all)")
    if options.variant not in VARIANTS:
        raise HarnessError(f"unknown variant {options.variant!r} (choose from {', '.join(VARIANTS)})")


def scanned(submission: Submission, variant: str) -> Submission:
    """The submission with the static scan's findings, but for what ``variant`` allows (which is no finding)."""
    findings = inspect_source(submission.text, str(submission.path))
    if variant != "tensor":
        findings = dataclasses.replace(findings, violations=kept(findings.violations, variant),
                                       review=kept_review(findings.review, variant))
    return dataclasses.replace(submission, findings=findings)


def sandbox_limits(options: GradeOptions) -> Limits:
    """The limits of one submission's sandbox, whoever opens it (a grade, ``--watch``, a batch)."""
    return Limits(memory_mb=options.memory_mb, tree_memory_mb=2 * options.memory_mb)


def _isolation_of(sandbox: Launcher | Sandbox | None) -> str:
    """The isolation a grade would have had, for reports decided before anything ran."""
    if isinstance(sandbox, Sandbox):
        return sandbox.isolation
    if isinstance(sandbox, Launcher):
        return sandbox.mode
    return "basic" if bubblewrap_missing() else "sandbox"


def _skipped_for_violation(grading: _Grading, checks: Sequence[Check], started: float) -> Report:
    """Every check skipped: the source uses torch's autograd on a line that runs at import."""
    from harness.checks.run import result
    from harness.diagnosis.causes import diagnose_safely

    static = grading.submission.findings
    skipped = hidden_marked([result(c, "skipped", why, "excused") if (why := grading.excuse(c)) else
                             result(c, "skipped", "skipped: the source uses torch's autograd (an integrity violation)",
                                    "stopped")
                             for c in checks], checks)
    points = allot(grading.rubric, skipped, excused(skipped))
    skipped, causes, failure = diagnose_safely(skipped, static.violations, points, {})
    return grading.report("graded", "", skipped, points, {"total": time.perf_counter() - started},
                          found=_found(static, grading.options.variant), causes=causes, diagnosis_error=failure)


def _run(grading: _Grading, declared: Sequence[Check], sandbox: Sandbox, started: float,
         timings: dict[str, float], core_graded: CoreGraded | None = None) -> Report:
    """Run the ``declared`` checks and the spec cases (planned meanwhile) on the submission in ``sandbox``,
    diagnose the failures, and score."""
    from harness.checks.context import Context, Shared
    from harness.checks.run import probes, run_checks, start, triage

    options, submission = grading.options, grading.submission
    static, path = submission.findings, submission.path
    sandbox.provide_source(path, submission.text)
    shared = Shared(deadline=started + options.time_limit, trace_calls=bool(static.violations))

    def new_context(members: frozenset[str] = frozenset()) -> Context:
        return Context(sandbox, path, options.class_name, path.stem if path.stem.isidentifier() else "solution",
                       shared, seed=options.seed, max_examples=options.max_examples, variant=options.variant,
                       members=members)

    hello, status, message = start(new_context(), submission.text, options.class_name, timings)
    if hello is None:
        spec_plan(options)  # a spec author's error is still the grader's one-line error
        return grading.report(status, message, [], {}, timings, found=_found(settle_run(static, submission, shared),
                                                                              options.variant, shared))
    stubs = _stubs(submission.text, options.class_name)
    members = frozenset(hello.get("members", [])) - set(stubs)
    results, runnable = triage(declared, members, hello.get("features", {}), options.class_name, grading.excuse, stubs)
    checks = list(declared)

    def specs() -> list[Check]:
        t0 = time.perf_counter()
        cases = spec_plan(options)
        checks[:] = in_order([*declared, *cases], options)  # the plan's order: by level, declared first
        found, run = triage(cases, members, hello.get("features", {}), options.class_name, grading.excuse, stubs)
        results.update(found)
        timings["specs"] = time.perf_counter() - t0
        return run

    def core_done(finished: dict[str, CheckResult]) -> None:
        assert core_graded is not None
        core = [c for c in checks if c.level == "core"]
        core_graded(_scored(grading, core, {**results, **finished}, shared, dict(timings), started, ("core",)))

    results.update(run_checks(runnable, lambda: new_context(members), timings,
                              first=(lambda c: c.level == "core") if core_graded is not None else lambda c: False,
                              first_done=core_done if core_graded is not None else None,
                              before=[probes(hello, submission.text, options.class_name)], later=specs))
    t0 = time.perf_counter()
    experiments = _experiments(results.values(), new_context(members), members, shared)
    timings["experiments"] = time.perf_counter() - t0
    return _scored(grading, checks, results, shared, timings, started, experiments=experiments)


def settle_run(static: Findings, submission: Submission, shared: Shared) -> Findings:
    """The static findings, each violation in a function that never ran (so far) turned into a review entry."""
    return settle(static, submission.text, shared.ran) if static.violations else static


def _scored(grading: _Grading, checks: Sequence[Check], results: dict[str, CheckResult], shared: Shared,
            timings: dict[str, float], started: float, levels: Sequence[str] | None = None,
            experiments: Sequence[Any] = ()) -> Report:
    """The report of ``checks``' results: diagnosed (with the experiments' outcomes), scored, with everything
    the grade found so far."""
    from harness.diagnosis.causes import diagnose_safely

    options = grading.options
    t0 = time.perf_counter()
    static = settle_run(grading.submission.findings, grading.submission, shared)
    ordered = hidden_marked([results[c.id] for c in checks], checks)
    points = allot(grading.rubric, ordered, excused(ordered))
    graded, causes, failure = diagnose_safely(ordered, (*static.violations, *kept(shared.violations, options.variant)),
                                              points, {c.id: c.graph for c in checks if c.graph is not None},
                                              experiments)
    timings["diagnosis"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - started
    return grading.report("graded", "", graded, points, timings, found=_found(static, options.variant, shared),
                          causes=causes, diagnosis_error=failure, levels=levels)


def hidden_marked(results: Sequence[CheckResult], checks: Sequence[Check]) -> list[CheckResult]:
    """``results`` with those of hidden spec cases marked so, for every renderer to read."""
    hidden = {c.id for c in checks if c.hidden}
    return [dataclasses.replace(r, hidden=True) if r.id in hidden else r for r in results]


def _experiments(results: Any, ctx: Any, members: frozenset[str], shared: Any) -> list[Any]:
    """The diagnosis's experiments, run when something failed and the grade still has time for them."""
    from harness.checks.experiments import run_experiments

    failing = sorted((r for r in results if r.outcome in FAILING and r.kind == "verdict"),
                     key=lambda r: (LEVELS.index(r.level) if r.level in LEVELS else len(LEVELS), r.id))
    if shared.why_skip() or not failing:
        return []
    try:
        return run_experiments(ctx, members, failing)
    finally:
        ctx.retire()


def excused(results: Sequence[CheckResult]) -> set[str]:
    """The checks that score nothing and cost nothing: not required by the agreements, or not credited."""
    return {r.id for r in results if r.kind == "excused"}


def _stubs(text: str, class_name: str) -> dict[str, str]:
    """The class's members (and ``no_grad``) that are still placeholders: not attempted, like missing ones."""
    try:
        return stub_members(ast.parse(text), class_name)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return {}


@dataclass(frozen=True)
class _Found:
    """What a grade found besides the verdicts: integrity violations and review entries, the submission's output."""

    violations: tuple[str, ...] = ()
    review: tuple[Any, ...] = ()
    output: dict[str, str] = field(default_factory=dict)


def _found(static: Findings, variant: str, shared: Shared | None = None) -> _Found:
    """The static findings and, once something ran, what ``shared`` saw at run time, as the variant keeps them."""
    at_run_time = kept(shared.violations, variant) if shared is not None else ()
    review = kept_review((*static.review, *(shared.review if shared is not None else ())), variant)
    return _Found(tuple(static.violations) + tuple(f"at run time: {v}" for v in at_run_time),
                  tuple(review), dict(shared.output) if shared is not None else {})


@dataclass(frozen=True)
class _Grading:
    """What one grade fixes before anything runs: its options and rubric, the submission, where it runs."""

    options: GradeOptions
    rubric: Rubric
    submission: Submission
    isolation: str
    isolation_note: str = ""

    @property
    def agreements(self) -> Agreements:
        """The agreements this grade applies: the command line's terms over the rubric's."""
        return self.options.agreements.over(self.rubric.agreements)

    def excuse(self, planned: Check) -> str | None:
        """Why a check is not required (the agreements) or not credited (the variant), if it is either."""
        return self.agreements.excuse(planned.requires) or not_credited(planned.concept, self.options.variant)

    def report(self, status: str, message: str, results: Sequence[CheckResult], points: dict[str, float],
               timings: dict[str, float], *, found: _Found = _Found(), causes: tuple[RootCause, ...] = (),
               diagnosis_error: str = "", levels: Sequence[str] | None = None) -> Report:
        """The Report: ``results`` scored with ``points`` (``report.score.allot``), and everything the grade found;
        ``levels`` are the levels it covers (by default, the ones the options grade)."""
        options = self.options
        if found.violations and status == "graded":
            status = "integrity_violation"
        if levels is None:
            levels = LEVELS if options.level == "all" else (options.level,)
        scores = score(results, points, self.rubric, levels,
                       excused=excused(results), graded=status == "graded", needs_review=bool(found.review))
        return Report(
            file=str(self.submission.path), status=status, score=scores.total, max_score=scores.max_score,
            levels=scores.levels, checks=scores.checks, integrity_violations=found.violations, message=message,
            seed=options.seed, interview=scores.interview, output=dict(found.output), timings=dict(timings),
            grader_version=__version__, integrity_review=found.review, isolation=self.isolation,
            isolation_note=self.isolation_note, source_sha256=self.submission.sha256,
            source_note=self.submission.note, root_causes=causes,
            agreements=self.agreements.to_dict(), variant=options.variant,
            diagnosis_error=diagnosis_error,
        )
