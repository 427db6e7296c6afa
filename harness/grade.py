"""Grading one submission: the stages composed, from a file to a ``Report``.

preflight (the source alone) -> the static scan -> the plan (targeted checks, spec cases,
properties) -> the checks run in the submission's sandbox (``checks.run``) -> the diagnosis
-> the score (``report.score``) -> a frozen Report that the renderers turn into text, JSON
or Markdown.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from harness import __version__
from harness.agreements import Agreements
from harness.variants import VARIANTS, kept, kept_review, not_credited
from harness.errors import HarnessError
from harness.integrity import Findings
from harness.integrity.use import runs_at_import, settle
from harness.vocabulary import LEVELS
from harness.report.model import CheckResult, Report
from harness.report.rubric import Rubric, load_rubric
from harness.report.score import allot, score
from harness.preflight import Submission, Unrunnable, read_submission
from harness.sandbox import Launcher, Limits, Sandbox, SandboxUnavailable, _linux, bubblewrap_missing

__all__ = ["GradeOptions", "grade", "preflight", "planned_checks", "protect_grader", "spec_paths", "rediagnose"]


@dataclass(frozen=True)
class GradeOptions:
    level: str = "all"
    seed: int = 0
    class_name: str = "Tensor"
    specs: tuple[Path, ...] = ()
    """Spec folders or files added to the shipped library (with ``replace_specs``, used instead of it)."""
    replace_specs: bool = False
    rubric: Path | None = None
    max_examples: int = 200
    """Hypothesis examples for the core property check (the others draw a share of it)."""
    time_limit: float = 600.0
    """Seconds for the whole grade, start-up and clean-up included: then the sandbox is killed."""
    memory_mb: int = 2048
    isolation: str = "auto"
    """"auto" (bubblewrap when it works), "sandbox" (bubblewrap or refuse) or "basic"."""
    levels: tuple[str, ...] = ()
    """Only the checks of these levels (with ``level="all"``); empty means every level ``level`` allows."""
    agreements: Agreements = Agreements()
    """What the interview agreed about the interface; over the rubric's agreements, term by term."""
    variant: str = "tensor"
    """"tensor" (the whole engine is the candidate's) or "function" (each op a torch.autograd.Function)."""
    follow_links: bool = True
    """Whether a submission file may be a symbolic link: a batch's never may (its candidates chose the files)."""


def planned_checks(options: GradeOptions) -> list[Any]:
    """Every check this grade will consider, in order: targeted checks, spec cases, properties."""
    import harness.checks.properties  # noqa: F401  -- registers the property checks
    import harness.checks.saved_tensors  # noqa: F401  -- registers the saved-tensor audit
    from harness.checks.run import PlannedCheck
    from harness.checks.targeted import CHECKS
    from harness.specs import DEFAULT_SPECS_DIR, load_cases

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


def grade(path: Path, options: GradeOptions = GradeOptions(), sandbox: Launcher | Sandbox | None = None) -> Report:
    """Grade one submission file. Raises HarnessError for bad input to the grader itself.

    ``sandbox`` is where the submission runs: a ``Launcher`` (a fresh sandbox is opened
    from it and closed afterwards), a ``Sandbox`` already opened for this submission, or
    None (a launcher of its own, started here).
    """
    started = time.perf_counter()
    path = Path(path)
    _check_options(options)
    rubric = load_rubric(options.rubric)
    early = preflight(path, options, rubric, sandbox)
    if isinstance(early, Report):
        return early
    submission = early
    if options.variant != "tensor":  # what the variant allows is not a finding
        submission = dataclasses.replace(submission, findings=dataclasses.replace(
            submission.findings, violations=kept(submission.findings.violations, options.variant),
            review=kept_review(submission.findings.review, options.variant)))
    protect_grader()
    plan = _plan(options)
    if submission.findings.violations and runs_at_import(submission.text, submission.findings):
        # Proof from the source alone, on a line that runs at import: nothing is run, every check is skipped.
        # (A violation inside functions only is proof once one of them runs: the grade goes on and looks.)
        return _skipped_for_violation(_Grading(options, rubric, submission, _isolation_of(sandbox)), plan, started)
    limits = Limits(memory_mb=options.memory_mb, tree_memory_mb=2 * options.memory_mb)
    owned: list[Any] = []
    try:
        if isinstance(sandbox, Sandbox):
            box = sandbox
        else:
            launcher = sandbox
            if launcher is None:
                launcher = Launcher(options.isolation, start_seconds=min(limits.start_seconds, options.time_limit))
                owned.append(launcher)
            box = launcher.sandbox(limits)
            owned.insert(0, box)
    except SandboxUnavailable as exc:
        _close_quietly(owned)
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
        report = _run(_Grading(options, rubric, submission, box.isolation, box.isolation_note), plan, box, started,
                      timings)
    finally:
        watchdog.cancel()
        _close_quietly(owned)
    if fired.is_set() and report.status != "integrity_violation":
        report = dataclasses.replace(report, status="timeout", message=(
            f"the grade ran past its time limit of {options.time_limit:g} s and the submission was stopped; "
            "the checks that finished are listed"))
    return report


def preflight(path: Path, options: GradeOptions, rubric: Rubric | None = None,
              sandbox: Launcher | Sandbox | None = None, *, scan: bool = True) -> Report | Submission:
    """Read and parse the submission without running it (and without torch).

    Returns the final Report when the source alone decides the grade (a syntax
    error, an empty file), else the parsed Submission. Raises HarnessError for a
    file that is not Python at all.
    """
    _check_options(options)
    try:
        return read_submission(path, options.class_name, scan=scan, follow_links=options.follow_links)
    except Unrunnable as exc:
        grading = _Grading(options, rubric or load_rubric(options.rubric),
                           Submission(Path(path), "", exc.sha256, Findings()), _isolation_of(sandbox))
        return grading.report("error", exc.message, [], {}, {})


def _check_options(options: GradeOptions) -> None:
    if options.level not in (*LEVELS, "all"):
        raise HarnessError(f"unknown level {options.level!r} (choose from {', '.join(LEVELS)}, all)")
    if options.variant not in VARIANTS:
        raise HarnessError(f"unknown variant {options.variant!r} (choose from {', '.join(VARIANTS)})")


def _plan(options: GradeOptions) -> list[Any]:
    from harness.specs import SpecError

    try:
        return planned_checks(options)
    except SpecError as exc:  # a spec author's folder: the same one-line error as `grade spec check`
        raise HarnessError(str(exc)) from None


def _isolation_of(sandbox: Launcher | Sandbox | None) -> str:
    """The isolation a grade would have had, for reports decided before anything ran."""
    if isinstance(sandbox, Sandbox):
        return sandbox.isolation
    if isinstance(sandbox, Launcher):
        return sandbox.mode
    return "basic" if bubblewrap_missing() else "sandbox"


def _close_quietly(things: Sequence[Any]) -> None:
    """Clean-up never changes a verdict: whatever a submission left behind, closing it must not raise."""
    for thing in things:
        try:
            thing.close()
        except Exception:
            pass


def protect_grader() -> None:
    """Harden the grader's own process, where no sandbox exists as much as where one does.

    Non-dumpable: a process of the same user cannot ptrace it or open its
    /proc/<pid>/mem. And every module the grader will ever import is imported now,
    before any submission runs, so nothing it loads later could have been planted.
    The renderers are above the grader: whoever renders (the command line, batch's
    grading.py) imports them before its first grade.
    """
    try:
        _linux.prctl(_linux.PR_SET_DUMPABLE, 0)
    except OSError:
        pass
    _keep_hypothesis_out_of_the_users_folders()
    import importlib

    for name in _LATE_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


_HYPOTHESIS_HOME: list[str] = []


def _keep_hypothesis_out_of_the_users_folders() -> None:
    """Hypothesis keeps caches under ``.hypothesis/`` in the working folder: give it a private temporary one."""
    if _HYPOTHESIS_HOME:
        return
    import atexit
    import shutil
    import tempfile

    from hypothesis.configuration import set_hypothesis_home_dir

    home = tempfile.mkdtemp(prefix="grade-hypothesis-")
    set_hypothesis_home_dir(home)
    atexit.register(shutil.rmtree, home, True)
    _HYPOTHESIS_HOME.append(home)


_LATE_IMPORTS = (
    "harness.checks.properties", "harness.checks.strategies", "harness.checks.targeted", "harness.checks.context",
    "harness.checks.saved_tensors",
    "harness.checks.examples", "harness.specs", "harness.checks.snippets",
    "harness.diagnosis.causes", "harness.diagnosis.matching", "harness.diagnosis.mutants", "reference.engine",
    "harness.checks.probes",
    # What hypothesis and torch would otherwise import on first use, mid-grade:
    "numpy.random", "secrets", "hmac", "torch._subclasses.schema_check_mode",
)

def _skipped_for_violation(grading: _Grading, plan: Sequence[Any], started: float) -> Report:
    """Every check skipped: the source uses torch's autograd on a line that runs at import."""
    from harness.checks.run import result
    from harness.diagnosis.causes import diagnose_safely

    static = grading.submission.findings
    skipped = [result(c, "skipped", grading.excuse(c) or "skipped: the source uses torch's autograd (an integrity "
                                                          "violation)") for c in plan]
    points = allot(grading.rubric, skipped)
    skipped, causes, failure = diagnose_safely(skipped, static.violations, points, {})
    return grading.report("graded", "", skipped, points, {"total": time.perf_counter() - started},
                          found=_found(static, grading.options.variant), causes=causes, diagnosis_error=failure)


def _run(grading: _Grading, plan: Sequence[Any], sandbox: Sandbox, started: float, timings: dict[str, float]) -> Report:
    """Run the plan on the submission in ``sandbox``, diagnose the failures, and score."""
    from harness.checks.context import Context, Shared
    from harness.checks.run import run_checks, start, triage
    from harness.diagnosis.causes import diagnose_safely

    options, submission = grading.options, grading.submission
    static, path = submission.findings, submission.path
    sandbox.provide_source(path, submission.text)
    shared = Shared(deadline=started + options.time_limit, trace_calls=bool(static.violations))

    def new_context(members: frozenset[str] = frozenset()) -> Context:
        return Context(sandbox, path, options.class_name, path.stem if path.stem.isidentifier() else "solution",
                       shared, seed=options.seed, max_examples=options.max_examples, variant=options.variant,
                       members=members)

    def settled() -> Findings:
        return settle(static, submission.text, shared.ran) if static.violations else static

    hello, status, message = start(new_context(), submission.text, options.class_name, timings)
    if hello is None:
        return grading.report(status, message, [], {}, timings, found=_found(settled(), options.variant, shared))
    members = frozenset(hello.get("members", []))
    results, runnable = triage(plan, members, hello.get("features", {}), options.class_name, grading.excuse)
    results.update(run_checks(runnable, lambda: new_context(members), timings))
    t0 = time.perf_counter()
    static = settled()
    ordered = [results[c.id] for c in plan]
    points = allot(grading.rubric, ordered)
    graded, causes, failure = diagnose_safely(ordered, (*static.violations, *kept(shared.violations, options.variant)),
                                              points, {c.id: c.graph for c in plan if c.graph is not None})
    timings["diagnosis"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - started
    return grading.report("graded", "", graded, points, timings, found=_found(static, options.variant, shared),
                          causes=causes, diagnosis_error=failure)


def rediagnose(report: Report, options: GradeOptions) -> Report:
    """The report's root causes diagnosed again over all its checks at once.

    ``--watch`` grades the core level first and the rest after; diagnosing the two halves
    apart would group and order the causes differently from a plain grade of the same file.
    """
    from harness.diagnosis.causes import diagnose_safely

    if report.status != "graded" or not report.checks:
        return report
    plan = planned_checks(dataclasses.replace(options, level="all", levels=()))
    graphs = {c.id: c.graph for c in plan if c.graph is not None}
    points = {c.id: c.max_points for c in report.checks}
    checks, causes, failure = diagnose_safely(list(report.checks), report.integrity_violations, points, graphs)
    return dataclasses.replace(report, checks=tuple(checks), root_causes=causes, diagnosis_error=failure)


def agreements_of(options: GradeOptions, rubric: Rubric) -> Agreements:
    """The agreements a grade applies: the command line's terms over the rubric's."""
    return options.agreements.over(rubric.agreements)


@dataclass(frozen=True)
class _Found:
    """What a grade found besides the verdicts: integrity violations and review entries, the submission's output."""

    violations: tuple[str, ...] = ()
    review: tuple[dict[str, Any], ...] = ()
    output: dict[str, str] = field(default_factory=dict)


def _found(static: Findings, variant: str, shared: Any = None) -> _Found:
    """The static findings and, once something ran, what ``shared`` saw at run time, as the variant keeps them."""
    at_run_time = kept(shared.violations, variant) if shared is not None else ()
    review = kept_review((*static.review, *(shared.review if shared is not None else ())), variant)
    return _Found(tuple(static.violations) + tuple(f"at run time: {v}" for v in at_run_time),
                  tuple(entry.to_dict() for entry in review), dict(shared.output) if shared is not None else {})


@dataclass(frozen=True)
class _Grading:
    """What one grade fixes before anything runs: its options and rubric, the submission, where it runs."""

    options: GradeOptions
    rubric: Rubric
    submission: Submission
    isolation: str
    isolation_note: str = ""

    def excuse(self, planned: Any) -> str | None:
        """Why a check is not required (the agreements) or not credited (the variant), if it is either."""
        return (agreements_of(self.options, self.rubric).excuse(planned.requires)
                or not_credited(planned.concept, self.options.variant))

    def report(self, status: str, message: str, results: Sequence[CheckResult], points: dict[str, float],
               timings: dict[str, float], *, found: _Found = _Found(), causes: tuple[dict[str, Any], ...] = (),
               diagnosis_error: str = "") -> Report:
        """The Report: ``results`` scored with ``points`` (``report.score.allot``), and everything the grade found."""
        options = self.options
        if found.violations and status == "graded":
            status = "integrity_violation"
        scores = score(results, points, self.rubric, LEVELS if options.level == "all" else (options.level,),
                       graded=status == "graded", needs_review=bool(found.review))
        return Report(
            file=str(self.submission.path), status=status, score=scores.total, max_score=scores.max_score,
            levels=scores.levels, checks=scores.checks, integrity_violations=found.violations, message=message,
            seed=options.seed, interview=scores.interview, output=dict(found.output), timings=dict(timings),
            grader_version=__version__, integrity_review=found.review, isolation=self.isolation,
            isolation_note=self.isolation_note, source_sha256=self.submission.sha256,
            source_note=self.submission.note, root_causes=causes,
            agreements=agreements_of(options, self.rubric).to_dict(), variant=options.variant,
            diagnosis_error=diagnosis_error,
        )
