"""Running the planned checks on one submission: each check's outcome, its time and smallest reproduction.

A check passes by returning and ends any other way by raising one of ``context``'s
endings (``Failed``, ``CandidateError``, ``CandidateTimeout``, ``NotAttempted``); which
outcome each ending means is decided here, beside them, and nowhere else. The checks
run in two lanes, each with a worker of its own, taking the costliest first from one queue.
"""

from __future__ import annotations

import ast
import dataclasses
import threading
import time
from typing import Any, Callable, Final, Iterable, Mapping, Sequence

from harness.checks.context import CandidateError, CandidateTimeout, Context, Evidence, Failed, NotAttempted, judge
from harness.checks.registry import Check
from harness.collector import collector_paused
from harness.concepts import with_explain_line
from harness.integrity.scan import member_line
from harness.preflight import suggest_class
from harness.report.model import CheckResult
from harness.vocabulary import FAILING, FEATURES, INFORMATIONAL

__all__ = ["LANES", "SNIPPET_STEPS", "start", "probes", "triage", "result", "run_checks", "run_check"]

LANES = 2
"""Checks run at once, each lane with its own worker: one per core of the machines we run on."""

SNIPPET_STEPS = 40
"""Graphs larger than this (the timing probes' thousands of nodes) get no snippet."""


def result(planned: Check, outcome: str, message: str, kind: str, reason: str = "") -> CheckResult:
    """The result of a check that was not run: skipped or not attempted, and why (``kind``, ``reason``)."""
    return CheckResult(planned.id, planned.level, planned.concept, planned.title, outcome, message, kind=kind,
                       reason=reason)


def start(ctx: Context, text: str, class_name: str, timings: dict[str, float]) -> tuple[dict[str, Any] | None, str, str]:
    """The submission's first worker: its hello, or None with the status and message of a submission that did not start.

    An engine also meets the run-time integrity probes (is it an engine at all?): ``probes`` is
    the task that runs them, which the caller hands to ``run_checks`` to run beside the first checks.
    """
    t0 = time.perf_counter()
    try:
        hello = ctx.worker().hello
    except (CandidateError, CandidateTimeout) as exc:
        ctx.retire()
        return None, "timeout" if isinstance(exc, CandidateTimeout) else "error", exc.message
    timings["import"] = time.perf_counter() - t0
    ctx.retire()
    if not hello.get("has_class"):
        try:
            hint = suggest_class(ast.parse(text), class_name)
        except (SyntaxError, RecursionError, MemoryError, ValueError):
            hint = ""
        return None, "error", f"the submission defines no class named {class_name!r}{hint}"
    return hello, "", ""


def probes(hello: dict[str, Any], text: str, class_name: str) -> Callable[[Context], None]:
    """The run-time integrity probes of a submission that started, as a task for a lane's context."""
    def run(ctx: Context) -> None:
        from harness.checks.probes import review_at_run_time

        review_at_run_time(ctx, set(hello.get("members", [])), member_line(text, class_name, "backward"))

    return run


def triage(plan: Iterable[Check], members: frozenset[str], features: dict[str, Any], class_name: str,
           excuse: Callable[[Check], str | None],
           stubs: Mapping[str, str] | None = None) -> tuple[dict[str, CheckResult], list[Check]]:
    """The checks that will not run (excused, or needing what the engine lacks) with their results, and the rest.

    ``stubs`` (member -> what its body is) are members the class defines but has not written yet: a check
    that needs one waits for it exactly as if it were missing."""
    results: dict[str, CheckResult] = {}
    runnable: list[Check] = []
    stubs = stubs or {}
    for planned in plan:
        missing = _missing(planned.requires, members, features, class_name, stubs)
        why = excuse(planned)
        if why:
            results[planned.id] = result(planned, "skipped", why, "excused")
        elif missing:
            kind, reason, message = missing
            waits = _members_waited_for(planned.requires, members, stubs)
            results[planned.id] = dataclasses.replace(
                result(planned, "not_attempted", f"not attempted: {message}", kind, reason),
                details={"waits_for": waits} if waits else {})
        else:
            runnable.append(planned)
    return results, runnable


def _members_waited_for(requires: frozenset[str], members: frozenset[str], stubs: Mapping[str, str]) -> list[str]:
    """Every member a check needs that the class lacks or has only as a stub."""
    return sorted(need for need in requires if not need.startswith("feature:") and (need in stubs or need not in members))


def _missing(requires: frozenset[str], members: frozenset[str], features: dict[str, Any], class_name: str,
             stubs: Mapping[str, str]) -> tuple[str, str, str] | None:
    """(kind, member or feature, message) for the first requirement the engine does not meet, or None."""
    for need in sorted(requires):
        if need.startswith("feature:numbers:"):
            op = need.removeprefix("feature:numbers:")
            if not features.get(f"number_forward:{op}", features.get("number_forward")):
                return "missing_feature", "numbers", f"a Python number as an operand of {op} raises in forward"
        elif need.startswith("feature:"):
            name = need.removeprefix("feature:")
            if name in stubs:
                return "stub", name, f"waits for `{name}()` (a stub: {stubs[name]})"
            if name in FEATURES and not features.get(FEATURES[name][0]):
                return "missing_feature", name, FEATURES[name][1]
        elif need in stubs:
            return "stub", need, f"waits for `{need}` ({class_name}.{need} is a stub: {stubs[need]})"
        elif need not in members:
            return "missing_member", need, f"waits for `{need}` ({class_name} has no {need})"
    return None


def run_checks(runnable: Sequence[Check], new_context: Callable[[], Context], timings: dict[str, float], *,
               first: Callable[[Check], bool] = lambda planned: False,
               first_done: Callable[[dict[str, CheckResult]], None] | None = None,
               before: Sequence[Callable[[Context], None]] = (),
               later: Callable[[], Sequence[Check]] | None = None) -> dict[str, CheckResult]:
    """Every check of ``runnable``, in ``LANES`` lanes, each with a context (and worker) of its own.

    ``before`` are tasks the lanes run first, each in its lane's context (the integrity probes).
    ``later`` is called here once the lanes run, and its checks join the queue: the grader plans
    the spec cases while the worker runs the first checks. The checks ``first`` picks run before
    the others, and ``first_done`` hears their results (in this thread) as soon as they are all
    in, while the lanes go on with the rest.
    """
    # Two lanes keep both cores busy: the grader's process works hardest on hypothesis
    # searches, the worker on probes and spec cases, so the lanes take the costliest
    # checks first from one shared queue.
    order: Callable[[Check], tuple[bool, float]] = lambda c: (not first(c), -c.cost)
    queue = sorted(runnable, key=order)
    tasks = list(before)
    waiting = {c.id for c in runnable if first(c)}
    lock = threading.Lock()
    results: dict[str, CheckResult] = {}
    queued = threading.Event()  # every check is in the queue (``later`` has answered)
    first_in = threading.Event()
    all_in = threading.Event()
    lanes_left = [LANES]
    failures: list[BaseException] = []

    def next_work() -> Callable[[Context], None] | Check | None:
        with lock:
            if tasks:
                return tasks.pop(0)
            if queue:
                return queue.pop(0)
        return None if queued.is_set() else _WAIT

    def run_lane() -> None:
        ctx = None
        try:
            ctx = new_context()
            while (work := next_work()) is not None:
                if work is _WAIT:  # the spec cases are still being planned
                    queued.wait(0.01)
                elif not isinstance(work, Check):
                    work(ctx)
                else:
                    outcome = run_check(work, ctx, timings)
                    with lock:
                        results[work.id] = outcome
                        waiting.discard(work.id)
                        if not waiting and queued.is_set():
                            first_in.set()
        except BaseException as exc:  # the grader's own fault: raised again in the caller's thread
            failures.append(exc)
        finally:
            if ctx is not None:
                ctx.retire()
            with lock:
                lanes_left[0] -= 1
                if not lanes_left[0]:
                    first_in.set()
                    all_in.set()

    # The checks make a few hundred thousand short-lived objects (the timing graphs alone); full
    # collections among them would pause both lanes for nothing: what is cyclic waits for the end.
    # The lanes are daemon threads: Ctrl-C in this thread stops waiting for them at once (the
    # caller closes the sandbox, which ends their workers).
    with collector_paused():
        try:
            for n in range(LANES):
                threading.Thread(target=run_lane, name=f"lane-{n}", daemon=True).start()
            added = later() if later is not None else ()
            with lock:
                queue.extend(added)
                queue.sort(key=order)
                waiting.update(c.id for c in added if first(c))
                queued.set()
                if not waiting:
                    first_in.set()
            first_in.wait()
            if first_done is not None and not failures:
                with lock:
                    done = dict(results)
                first_done(done)
            all_in.wait()
        except BaseException:
            with lock:
                queue.clear()  # the lanes take nothing more
                tasks.clear()
            queued.set()
            raise
    if failures:
        raise failures[0]
    return results


_WAIT: Final = object()
"""What a lane gets while the queue is empty but more checks are coming."""


def run_check(planned: Check, ctx: Context, timings: dict[str, float]) -> CheckResult:
    """Run one check in ``ctx``: its outcome, message and details, and its time in ``timings``."""
    base = dict(id=planned.id, level=planned.level, concept=planned.concept, title=planned.title)
    skip = ctx.shared.why_skip()
    if skip:
        return CheckResult(**base, outcome="skipped", message=f"skipped: {skip}", kind="stopped")
    ctx.begin(time.perf_counter() + planned.timeout, fresh=planned.isolated)
    t = time.perf_counter()
    outcome, message, details, evidence, reason = "passed", "", {}, None, ""
    kind = "informational" if planned.id in INFORMATIONAL else "verdict"
    try:
        planned.run(ctx)
    except Failed as exc:
        outcome, message, details, evidence, reason = "failed", exc.message, exc.details, exc.evidence, exc.reason
    except NotAttempted as exc:
        outcome, message, kind, reason = "not_attempted", f"not attempted: {exc.message}", "missing_member", exc.reason
    except CandidateTimeout as exc:
        outcome, message, details, evidence, reason = "timeout", exc.message, exc.details, exc.evidence, exc.reason
    except CandidateError as exc:
        outcome, message, details, evidence, reason = "error", exc.message, exc.details, exc.evidence, exc.reason
    except Exception as exc:  # a fault of the grader's: report it on this check, grade the rest
        outcome, message = "error", f"internal grader error: {type(exc).__name__}: {exc}"
    notes = getattr(ctx, "notes", None)
    if notes:
        details = {**notes, **details}
    if outcome in FAILING and planned.hint and "hint" not in details:
        details = {**details, "hint": planned.hint}
    if outcome in FAILING:
        details = {**details, "hint": with_explain_line(details.get("hint"), planned.concept)}
    if evidence is not None and outcome in ("failed", "error"):
        evidence, details = _smallest_reproduction(evidence, details, ctx)
    elapsed = time.perf_counter() - t
    timings[planned.id] = elapsed
    return CheckResult(**base, outcome=outcome, message=message, details=details, seconds=elapsed, evidence=evidence,
                       kind=kind, reason=reason)


def _smallest_reproduction(evidence: Any, details: dict[str, Any], ctx: Any) -> tuple[Any, dict[str, Any]]:
    """The failing program without its dead steps, when the candidate fails it the same way; and its snippet.

    Dropping a step that does not lead to the output cannot change a correct gradient,
    but it might change a buggy engine's behaviour: the smaller program is kept only
    when running it again reproduces the check's failure word for word.
    """
    from harness.checks.snippets import ends_in_its_failure, reproduce

    parts = ("error", "values", "requires_grad", "grads")
    original = evidence
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
    if evidence is original and ends_in_its_failure(details.get("snippet", "")):
        return evidence, details  # the check's own ending may judge more than values (a dtype, a convention)
    snippet = reproduce(evidence.program, ctx.path, ctx.class_name, evidence.expected, evidence.observation)
    if not snippet:
        details.pop("snippet", None)
        return evidence, details
    return evidence, {**details, "snippet": snippet}

