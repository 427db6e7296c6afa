"""Grading one submission: the whole pipeline from a file to a ``Report``.

submission -> worker (runs candidate code, returns raw values) -> verdicts
(made here against torch) -> score (the rubric) -> a frozen Report that the
renderers turn into text, JSON or Markdown.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from harness import __version__
from harness.errors import HarnessError
from harness.integrity import Findings, inspect_source, member_line
from harness.ops import LEVELS
from harness.report.model import CheckResult, Report
from harness.report.rubric import Rubric, load_rubric
from harness.sandbox import Limits, Sandbox
from harness.specs import SpecError

__all__ = ["GradeOptions", "grade", "planned_checks"]

LANES = 2
"""Checks run at once, each lane with its own worker: one per core of the machines we run on."""


@dataclass(frozen=True)
class GradeOptions:
    level: str = "all"
    seed: int = 0
    class_name: str = "Tensor"
    specs: tuple[Path, ...] = ()
    """Spec folders or files; empty means the shipped library."""
    rubric: Path | None = None
    max_examples: int = 200
    """Hypothesis examples for the core property check (the others draw a share of it)."""
    time_limit: float = 600.0
    """Seconds for the whole submission; checks left when it runs out are skipped."""
    memory_mb: int = 2048


@dataclass(frozen=True)
class PlannedCheck:
    id: str
    level: str
    concept: str
    title: str
    hint: str | None
    requires: frozenset[str]
    timeout: float
    run: Callable[[Any], None]
    cost: float = 1.0
    """Rough seconds it takes on a correct engine; the costliest checks start first."""
    isolated: bool = True
    """Runs in a fresh worker. Spec cases share one: they are plain graph runs, and forking
    a worker per case would cost more than the cases themselves."""


def planned_checks(options: GradeOptions) -> list[PlannedCheck]:
    """Every check this grade will consider, in order: targeted checks, spec cases, properties."""
    import harness.checks.properties  # noqa: F401  -- registers the property checks
    from harness.checks.targeted import CHECKS
    from harness.specs import DEFAULT_SPECS_DIR, load_cases

    plan = [PlannedCheck(c.id, c.level, c.concept, c.title, c.hint, c.requires, c.timeout, c.run, c.cost)
            for c in CHECKS]
    for case in load_cases(list(options.specs) or [DEFAULT_SPECS_DIR]):
        plan.append(PlannedCheck(
            f"spec:{case.id}", case.level, case.concepts[0], case.title, case.hint,
            frozenset(case.requirements), 30.0, _spec_runner(case), cost=0.01, isolated=False,
        ))
    order = {level: i for i, level in enumerate(LEVELS)}
    plan.sort(key=lambda c: order[c.level])  # stable: declaration order inside a level
    if options.level != "all":
        plan = [c for c in plan if c.level == options.level]
    return plan


def _spec_runner(case: Any) -> Callable[[Any], None]:
    def run(ctx: Any) -> None:
        ctx.expect(case.program, tolerance=case.tolerance, hint=case.hint, expected=case.expected)

    return run


def grade(path: Path, options: GradeOptions = GradeOptions(), sandbox: Sandbox | None = None) -> Report:
    """Grade one submission file. Raises HarnessError for bad input to the grader itself."""
    started = time.perf_counter()
    path = Path(path)
    if options.level not in (*LEVELS, "all"):
        raise HarnessError(f"unknown level {options.level!r} (choose from {', '.join(LEVELS)}, all)")
    if not path.is_file():
        raise HarnessError(f"{path}: no such file")
    try:
        raw = path.read_bytes()
        source = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the submission: {exc}") from None
    rubric = load_rubric(options.rubric)
    own_sandbox = sandbox is None
    sandbox = sandbox or Sandbox.launch(Limits(memory_mb=options.memory_mb))
    try:
        try:
            plan = planned_checks(options)
        except SpecError as exc:  # a spec author's folder: the same one-line error as `grade spec check`
            raise HarnessError(str(exc)) from None
        timings = {"setup": time.perf_counter() - started}
        return _grade(path, source, options, rubric, plan, sandbox, started, timings,
                      hashlib.sha256(raw).hexdigest())
    finally:
        if own_sandbox:
            sandbox.close()


def _grade(path: Path, source: str, options: GradeOptions, rubric: Rubric, plan: Sequence[PlannedCheck],
           sandbox: Sandbox, started: float, timings: dict[str, float], sha256: str) -> Report:
    from harness.checks.context import CandidateError, CandidateTimeout, Context, Shared

    static = inspect_source(source, str(path))
    finish = functools.partial(_report, isolation=sandbox.isolation, sha256=sha256)
    module_name = path.stem if path.stem.isidentifier() else "solution"
    shared = Shared(deadline=started + options.time_limit)

    def new_context() -> Context:
        ctx = Context(sandbox, path, options.class_name, module_name, shared)
        ctx.seed, ctx.max_examples = options.seed, options.max_examples
        return ctx

    ctx = new_context()
    t0 = time.perf_counter()
    try:
        hello = ctx.worker().hello
    except (CandidateError, CandidateTimeout) as exc:
        status = "timeout" if isinstance(exc, CandidateTimeout) else "error"
        ctx.retire()
        return finish(path, status, exc.message, [], rubric, options, static, shared, timings)
    timings["import"] = time.perf_counter() - t0
    if hello.get("has_class"):  # integrity: is it an engine at all (finite differences)?
        from harness.integrity.probes import review_at_run_time

        review_at_run_time(ctx, set(hello.get("members", [])), member_line(source, options.class_name, "backward"))
    ctx.retire()
    if not hello.get("has_class"):
        return finish(path, "error", f"the submission defines no class named {options.class_name!r}", [], rubric,
                      options, static, shared, timings)
    members = set(hello.get("members", []))
    features = hello.get("features", {})

    results: dict[str, CheckResult] = {}
    runnable: list[PlannedCheck] = []
    for planned in plan:
        missing = _missing(planned.requires, members, features, options.class_name)
        if missing:
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

    with ThreadPoolExecutor(max_workers=LANES) as pool:
        for future in [pool.submit(run_lane) for _ in range(LANES)]:
            future.result()
    timings["total"] = time.perf_counter() - started
    return finish(path, "graded", "", [results[c.id] for c in plan], rubric, options, static, shared, timings)


def _run_check(planned: PlannedCheck, ctx: Any, options: GradeOptions, timings: dict[str, float]) -> CheckResult:
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
    if outcome in ("failed", "error", "timeout") and planned.hint and "hint" not in details:
        details = {**details, "hint": planned.hint}
    elapsed = time.perf_counter() - t
    timings[planned.id] = elapsed
    return CheckResult(**base, outcome=outcome, message=message, details=details, seconds=elapsed, evidence=evidence)


_FEATURES = {
    "broadcasting": ("broadcast_forward", "adding tensors of shapes (2, 2) and (2,) raises in forward"),
    "upstream": ("backward_takes_grad", "backward() takes no gradient argument"),
    "numbers": ("number_forward", "a Python number as an operand (a + 1, 2 * a) raises"),
    "no_grad": ("no_grad", "the module defines no no_grad()"),
}


def _missing(requires: frozenset[str], members: set[str], features: dict[str, Any], class_name: str) -> str | None:
    for need in sorted(requires):
        if need.startswith("feature:"):
            name = need.removeprefix("feature:")
            if name in _FEATURES and not features.get(_FEATURES[name][0]):
                return _FEATURES[name][1]
        elif need not in members:
            return f"{class_name} has no {need}"
    return None


def _report(path: Path, status: str, message: str, results: list[CheckResult], rubric: Rubric,
            options: GradeOptions, static: Findings, shared: Any, timings: dict[str, float], *,
            isolation: str, sha256: str) -> Report:
    violations = tuple(static.violations) + tuple(f"at run time: {v}" for v in shared.violations)
    if violations and status == "graded":
        status = "integrity_violation"
    points = rubric.allot([(r.id, r.level) for r in results])
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
    review = tuple(entry.to_dict() for entry in (*static.review, *shared.review))
    interview = rubric.interview(levels.get("core"), scored, graded=status == "graded", needs_review=bool(review))
    return Report(
        file=str(path), status=status, score=sum(v["score"] for v in levels.values()),
        max_score=sum(v["max_score"] for v in levels.values()), levels=levels, checks=tuple(scored),
        integrity_violations=violations, message=message, seed=options.seed, interview=interview,
        output=dict(shared.output), timings=dict(timings), grader_version=__version__,
        integrity_review=review, isolation=isolation,
        source_sha256=sha256,
    )
