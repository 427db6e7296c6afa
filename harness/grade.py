"""Grading one submission: the whole pipeline from a file to a ``Report``.

submission -> worker (runs candidate code, returns raw values) -> verdicts
(made here against torch) -> score (the rubric) -> a frozen Report that the
renderers turn into text, JSON or Markdown.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

from harness import __version__
from harness.agreements import NOT_REQUIRED, Agreements
from harness.variants import NOT_CREDITED_TEXT, VARIANTS, kept, kept_review, not_credited
from harness.errors import HarnessError
from harness.integrity import Findings, member_line
from harness.integrity.use import runs_at_import, settle
from harness.vocabulary import FAILING, FEATURES, LEVELS
from harness.report.model import CheckResult, Report, RootCause
from harness.report.rubric import Rubric, load_rubric
from harness.preflight import Submission, Unrunnable, read_submission
from harness.checks.registry import Check
from harness.sandbox import Launcher, Limits, Sandbox, SandboxUnavailable, _linux, bubblewrap_missing
from harness.sandbox.opening import Opening

__all__ = ["GradeOptions", "grade", "preflight", "planned_checks", "protect_grader", "spec_paths", "rediagnose"]

LANES = 2
"""Checks run at once, each lane with its own worker: one per core of the machines we run on."""


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


def planned_checks(options: GradeOptions) -> list[Check]:
    """Every check this grade will consider, in order: targeted checks, spec cases, properties."""
    from harness.checks.registry import registered
    from harness.specs.as_checks import spec_checks

    plan = registered() + spec_checks(spec_paths(options))
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
    limits = Limits(memory_mb=options.memory_mb, tree_memory_mb=2 * options.memory_mb)
    decided = bool(submission.findings.violations) and runs_at_import(submission.text, submission.findings)
    # The sandbox opens while the grader imports and plans; the submission runs only once both are done.
    opening = None if decided else Opening(sandbox, options.isolation, limits,
                                           min(limits.start_seconds, options.time_limit))
    try:
        protect_grader()
        plan = _plan(options)
    except BaseException:
        if opening is not None:
            opening.close()
        raise
    if decided:
        # Proof from the source alone, on a line that runs at import: nothing is run, every check is skipped.
        # (A violation inside functions only is proof once one of them runs: the grade goes on and looks.)
        skipped = [CheckResult(c.id, c.level, c.concept, c.title, "skipped",
                               _excuse(c, options, rubric) or
                               "skipped: the source uses torch's autograd (an integrity violation)") for c in plan]
        from harness.diagnosis.causes import diagnose_safely

        skipped, causes, failure = diagnose_safely(skipped, submission.findings.violations, None, {})
        return _report(path, "graded", "", skipped, rubric, options, submission.findings, _NOTHING_RAN,
                       {"total": time.perf_counter() - started}, isolation=_isolation_of(sandbox),
                       isolation_note="", sha256=submission.sha256, root_causes=causes, diagnosis_error=failure,
                       source_note=submission.note)
    assert opening is not None
    try:
        box = opening.result()
    except SandboxUnavailable as exc:
        opening.close()
        raise HarnessError(str(exc)) from None
    owned = opening.owned
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
        report = _grade(submission, options, rubric, plan, box, started, timings)
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
        return _report(Path(path), "error", exc.message, [], rubric or load_rubric(options.rubric), options,
                       Findings(), _NOTHING_RAN, {}, isolation=_isolation_of(sandbox), isolation_note="",
                       sha256=exc.sha256)


def _check_options(options: GradeOptions) -> None:
    if options.level not in (*LEVELS, "all"):
        raise HarnessError(f"unknown level {options.level!r} (choose from {', '.join(LEVELS)}, all)")
    if options.variant not in VARIANTS:
        raise HarnessError(f"unknown variant {options.variant!r} (choose from {', '.join(VARIANTS)})")


def _plan(options: GradeOptions) -> list[Check]:
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


_NOTHING_RAN = SimpleNamespace(violations=(), output={}, review=())


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
    import importlib

    # The first time, the imports' objects are made with the collector paused and frozen
    # afterwards: they live as long as the process, and no later collection scans them again.
    first, collecting = not _IMPORTED, gc.isenabled()
    if first:
        gc.disable()
    try:
        _keep_hypothesis_out_of_the_users_folders()
        for name in _LATE_IMPORTS:
            try:
                importlib.import_module(name)
            except ImportError:
                pass
    finally:
        if first:
            _IMPORTED.append(True)
            gc.freeze()
            if collecting:
                gc.enable()


_IMPORTED: list[bool] = []
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
    "harness.checks.saved_tensors", "harness.checks.ties", "harness.specs.as_checks",
    "harness.checks.examples", "harness.specs", "harness.checks.snippets",
    "harness.diagnosis.causes", "harness.diagnosis.matching", "harness.diagnosis.mutants", "reference.engine",
    "harness.checks.probes",
    # What hypothesis and torch would otherwise import on first use, mid-grade:
    "numpy.random", "secrets", "hmac", "torch._subclasses.schema_check_mode",
)

def _grade(submission: Submission, options: GradeOptions, rubric: Rubric, plan: Sequence[Check],
           sandbox: Sandbox, started: float, timings: dict[str, float]) -> Report:
    from harness.checks.context import CandidateError, CandidateTimeout, Context, Shared
    from harness.diagnosis.causes import diagnose_safely

    path, static, sha256 = submission.path, submission.findings, submission.sha256
    finish = functools.partial(_report, isolation=sandbox.isolation, isolation_note=sandbox.isolation_note,
                               sha256=sha256, source_note=submission.note)
    module_name = path.stem if path.stem.isidentifier() else "solution"
    sandbox.provide_source(path, submission.text)
    shared = Shared(deadline=started + options.time_limit)
    shared.trace_calls = bool(static.violations)  # evidence of use: which functions ran

    def settled() -> Findings:
        return settle(static, submission.text, shared.ran) if static.violations else static

    def new_context() -> Context:
        ctx = Context(sandbox, path, options.class_name, module_name, shared)
        ctx.seed, ctx.max_examples = options.seed, options.max_examples
        ctx.variant = options.variant
        return ctx

    ctx = new_context()
    t0 = time.perf_counter()
    try:
        hello = ctx.worker().hello
    except (CandidateError, CandidateTimeout) as exc:
        status = "timeout" if isinstance(exc, CandidateTimeout) else "error"
        ctx.retire()
        return finish(path, status, exc.message, [], rubric, options, settled(), shared, timings)
    timings["import"] = time.perf_counter() - t0
    if hello.get("has_class"):  # integrity: is it an engine at all (finite differences)?
        from harness.checks.probes import review_at_run_time

        review_at_run_time(ctx, set(hello.get("members", [])),
                           member_line(submission.text, options.class_name, "backward"))
    ctx.retire()
    if not hello.get("has_class"):
        import ast

        from harness.preflight import suggest_class

        try:
            hint = suggest_class(ast.parse(submission.text), options.class_name)
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            hint = ""
        return finish(path, "error", f"the submission defines no class named {options.class_name!r}{hint}", [], rubric,
                      options, settled(), shared, timings)
    members = set(hello.get("members", []))
    features = hello.get("features", {})

    results: dict[str, CheckResult] = {}
    runnable: list[Check] = []
    for planned in plan:
        missing = _missing(planned.requires, members, features, options.class_name)
        excuse = _excuse(planned, options, rubric)
        if excuse:
            results[planned.id] = CheckResult(planned.id, planned.level, planned.concept, planned.title,
                                              "skipped", excuse)
        elif missing:
            results[planned.id] = CheckResult(planned.id, planned.level, planned.concept, planned.title,
                                              "not_attempted", f"not attempted: {missing}")
        else:
            runnable.append(planned)

    # Two lanes, each with its own worker, keep both cores busy: the grader's process
    # works hardest on hypothesis searches, the worker on probes and spec cases, so
    # the lanes take the costliest checks first from one shared queue.
    queue = sorted(runnable, key=lambda c: -c.cost)
    lock = threading.Lock()

    def run_lane() -> None:
        lane_ctx = new_context()
        lane_ctx.members = members
        try:
            while True:
                with lock:
                    if not queue:
                        return
                    planned = queue.pop(0)
                results[planned.id] = _run_check(planned, lane_ctx, options, timings)
        finally:
            lane_ctx.retire()

    # The checks make a few hundred thousand short-lived objects (the timing graphs alone); full
    # collections among them would pause both lanes for nothing: what is cyclic waits for the end.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with ThreadPoolExecutor(max_workers=LANES) as pool:
            for future in [pool.submit(run_lane) for _ in range(LANES)]:
                future.result()
    finally:
        if collecting:
            gc.enable()
    t0 = time.perf_counter()
    static = settled()
    graded, causes, failure = diagnose_safely(
        [results[c.id] for c in plan], (*static.violations, *kept(shared.violations, options.variant)),
        rubric.allot([(c.id, c.level) for c in plan], _excused(results.values())),
        {c.id: c.graph for c in plan if c.graph is not None})
    timings["diagnosis"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - started
    return finish(path, "graded", "", graded, rubric, options, static, shared, timings, root_causes=causes,
                  diagnosis_error=failure)


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


def _run_check(planned: Check, ctx: Any, options: GradeOptions, timings: dict[str, float]) -> CheckResult:
    from harness.checks.context import CandidateError, CandidateTimeout, Failed, NotAttempted

    base = dict(id=planned.id, level=planned.level, concept=planned.concept, title=planned.title)
    skip = ctx.shared.why_skip()
    if skip:
        return CheckResult(**base, outcome="skipped", message=f"skipped: {skip}")
    ctx.begin(time.perf_counter() + planned.timeout, fresh=planned.isolated)
    t = time.perf_counter()
    outcome, message, details, evidence = "passed", "", {}, None
    try:
        planned.run(ctx)
    except Failed as exc:
        outcome, message, details, evidence = "failed", exc.message, exc.details, exc.evidence
    except NotAttempted as exc:
        outcome, message = "not_attempted", f"not attempted: {exc.message}"
    except CandidateTimeout as exc:
        outcome, message, details, evidence = "timeout", exc.message, exc.details, exc.evidence
    except CandidateError as exc:
        outcome, message, details, evidence = "error", exc.message, exc.details, exc.evidence
    except Exception as exc:  # a fault of the grader's: report it on this check, grade the rest
        outcome, message = "error", f"internal grader error: {type(exc).__name__}: {exc}"
    notes = getattr(ctx, "notes", None)
    if notes:
        details = {**notes, **details}
    if outcome in FAILING and planned.hint and "hint" not in details:
        details = {**details, "hint": planned.hint}
    if outcome in FAILING:
        details = {**details, "hint": _with_explain(details.get("hint"), planned.concept)}
    if evidence is not None and outcome in ("failed", "error"):
        evidence, details = _smallest_reproduction(evidence, details, ctx)
    elapsed = time.perf_counter() - t
    timings[planned.id] = elapsed
    return CheckResult(**base, outcome=outcome, message=message, details=details, seconds=elapsed, evidence=evidence)


def _with_explain(hint: str | None, concept: str) -> str:
    """A failing check's hint, ending with the concept to read about."""
    from harness.concepts import explain_line

    hint = (hint or "").rstrip()
    if hint and not hint.endswith((".", "!", "?", ")")):
        hint += "."
    return f"{hint} {explain_line(concept)}".strip()


def _smallest_reproduction(evidence: Any, details: dict[str, Any], ctx: Any) -> tuple[Any, dict[str, Any]]:
    """The failing program without its dead steps, when the candidate fails it the same way; and its snippet.

    Dropping a step that does not lead to the output cannot change a correct gradient,
    but it might change a buggy engine's behaviour: the smaller program is kept only
    when running it again reproduces the check's failure word for word.
    """
    from harness.checks.context import Evidence, judge
    from harness.checks.snippets import reproduce

    parts = ("error", "values", "requires_grad", "grads")
    smaller = evidence.program.live()
    if smaller is not evidence.program and evidence.observation is not None:
        try:
            before = judge(evidence.program, evidence.observation, evidence.expected, parts)
            observed = ctx.run(smaller, timeout=5.0)
            expected = smaller.run_torch()
            after = judge(smaller, observed, expected, parts)
            if before is not None and after is not None and after.message == before.message:
                evidence = Evidence(smaller, observed, expected)
        except Exception:  # a second run is a bonus: whatever goes wrong, keep the original
            pass
    details = {**details, "graph": evidence.program.summary()}
    if len(evidence.program.steps) > SNIPPET_STEPS:
        details.pop("snippet", None)  # thousands of lines help no one: the message says what to look at
        return evidence, details
    snippet = reproduce(evidence.program, ctx.path, ctx.class_name, evidence.expected, evidence.observation)
    if not snippet:
        details.pop("snippet", None)
        return evidence, details
    return evidence, {**details, "snippet": snippet}


SNIPPET_STEPS = 40
"""Graphs larger than this (the timing probes' thousands of nodes) get no snippet."""


def agreements_of(options: GradeOptions, rubric: Rubric) -> Agreements:
    """The agreements a grade applies: the command line's terms over the rubric's."""
    return options.agreements.over(rubric.agreements)


def _excuse(planned: Check, options: GradeOptions, rubric: Rubric) -> str | None:
    """Why a check is not required (the agreements) or not credited (the variant), if it is either."""
    return agreements_of(options, rubric).excuse(planned.requires) or not_credited(planned.concept, options.variant)


def _excused(results: Any) -> set[str]:
    return {r.id for r in results if r.outcome == "skipped" and r.message.startswith((NOT_REQUIRED, NOT_CREDITED_TEXT))}


def _missing(requires: frozenset[str], members: set[str], features: dict[str, Any], class_name: str) -> str | None:
    for need in sorted(requires):
        if need.startswith("feature:"):
            name = need.removeprefix("feature:")
            if name in FEATURES and not features.get(FEATURES[name][0]):
                return FEATURES[name][1]
        elif need not in members:
            return f"{class_name} has no {need}"
    return None


def _report(path: Path, status: str, message: str, results: list[CheckResult], rubric: Rubric,
            options: GradeOptions, static: Findings, shared: Any, timings: dict[str, float], *,
            isolation: str, isolation_note: str, sha256: str, root_causes: tuple[RootCause, ...] = (),
            diagnosis_error: str = "", source_note: str = "") -> Report:
    violations = tuple(static.violations) + tuple(f"at run time: {v}" for v in kept(shared.violations, options.variant))
    if violations and status == "graded":
        status = "integrity_violation"
    points = rubric.allot([(r.id, r.level) for r in results], _excused(results))
    scored = []
    for r in results:
        earned = points[r.id] if r.outcome == "passed" and status == "graded" else 0.0
        scored.append(dataclasses.replace(r, points=earned, max_points=points[r.id]))
    levels_used = LEVELS if options.level == "all" else (options.level,)
    levels = {
        level: {"score": sum(r.points for r in scored if r.level == level),
                "max_score": rubric.levels.get(level, 0.0)}
        for level in levels_used
    }
    review = kept_review((*static.review, *shared.review), options.variant)
    interview = rubric.interview(levels.get("core"), scored, graded=status == "graded", needs_review=bool(review),
                                 excused=_excused(scored))
    return Report(
        file=str(path), status=status, score=sum(v["score"] for v in levels.values()),
        max_score=sum(v["max_score"] for v in levels.values()), levels=levels, checks=tuple(scored),
        integrity_violations=violations, message=message, seed=options.seed, interview=interview,
        output=dict(shared.output), timings=dict(timings), grader_version=__version__,
        integrity_review=review, isolation=isolation, isolation_note=isolation_note, source_sha256=sha256,
        source_note=source_note,
        root_causes=root_causes, agreements=agreements_of(options, rubric).to_dict(), variant=options.variant,
        diagnosis_error=diagnosis_error,
    )
