"""Root causes: a grade's failures grouped by the bug that explains them, the one to fix first first.

Each failing check is matched against the catalogue (``matching``). Checks are then
grouped greedily: the bug that explains the most failures takes them all, then the
next, so one bug that breaks twenty checks reads as one cause, not twenty. A check
goes only to a bug among its best fits. Failures no bug reproduces are grouped by
the op nearest to what went wrong, and say nothing about a bug. The causes are
ordered by the points their checks cost (then by size); a bug behind an integrity
finding comes first, since that finding costs every point.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Final, Mapping, Sequence

from harness.checks.context import scalar_root
from harness.diagnosis.catalogue import BUGS, bug
from harness.diagnosis.confidence import confidence
from harness.diagnosis.observed import observed_facts
from harness.diagnosis.symptoms import (ENGINE, Finding, Refuter, contradicted, explains_composed, localise)
from harness.diagnosis.matching import Match, fails, match_evidence, match_signatures, match_violations
from harness.diagnosis.missing import missing_members
from harness.diagnosis.unexplained import size, unexplained
from harness.ops import LEVELS
from harness.program import Outcome, Program
from harness.report.model import CheckResult, RootCause
from harness.vocabulary import CONFIDENCES, FAILING

__all__ = ["diagnose", "diagnose_safely"]

BEST = 0.01
"""Matches within this much of a check's best fit count as equally good."""

_ORDER = {b.id: i for i, b in enumerate(BUGS)}


def diagnose_safely(results: Sequence[CheckResult], violations: Sequence[str] = (),
                    points: Mapping[str, float] | None = None,
                    graphs: Mapping[str, tuple[Program, Outcome]] | None = None,
                    experiments: Sequence[Any] = (),
                    ) -> tuple[list[CheckResult], tuple[RootCause, ...], str]:
    """``diagnose`` that never raises: on a fault of its own, the results unchanged, no causes and why.

    A diagnosis is advice on top of the verdicts; a fault in it must not cost the report.
    """
    try:
        graded, causes = diagnose(results, violations, points, graphs, experiments)
        return graded, causes, ""
    except Exception as exc:  # noqa: BLE001 -- any fault of the grader's own, reported in the report
        return list(results), (), f"internal grader error in the diagnosis: {type(exc).__name__}: {exc}"


def diagnose(results: Sequence[CheckResult], violations: Sequence[str] = (),
             points: Mapping[str, float] | None = None,
             graphs: Mapping[str, tuple[Program, Outcome]] | None = None,
             experiments: Sequence[Any] = (),
             ) -> tuple[list[CheckResult], tuple[RootCause, ...]]:
    """The results with ``diagnosis`` filled in, and the root causes, the one to fix first first.

    Each cause is a hypothesis held to experiments: the graphs of the checks the engine passed and the
    diagnosis's own ``experiments`` (``checks.experiments``), where its replay predicts pass or fail.
    A catalogued bug that predicts a failure the engine does not show is dropped; a cause is
    ``confirmed`` when what the worker saw shows it directly, or when every rival that explains its
    failures as well is ruled out by an experiment; ``likely`` when a rival stands; ``unexplained``
    when nothing reproduces its failures. What costs only memory or time comes after every wrong result;
    then core causes before follow-ups before extensions; within a level wrong results before
    conventions, then confirmed causes first, then the most fundamental (the engine's structure before
    its ops); ``points`` (check id -> its points) only breaks ties. ``graphs`` maps check ids to the program each runs and torch's outcome.
    """
    results = [_with_torch_outcome(r) for r in results]
    passed = [r.id for r in results if r.outcome == "passed"]
    failing = [r for r in results if r.outcome in FAILING]
    replays: dict = {}
    matches: dict[str, list[Match]] = {}
    observed: dict[str, list[Finding]] = {}
    # A failing graph the engine gets right as the first graph of fresh workers: what ran before broke it.
    # A rule that scales one op's gradient cannot do that (it fails the graph wherever it runs), but a bug
    # whose effect depends on the order contributions arrive in may: an order taken from a set of nodes also
    # depends on what ran before, through the memory addresses, and then the bug that order exposes (an
    # overwrite, say) reproduces the failure and is the cause.
    fresh = {e.fresh_for for e in experiments if getattr(e, "fresh_for", None) and e.passed}
    state = set()
    for r in failing:
        ev = r.evidence
        if ev is not None and ev.observation is not None and ev.expected is not None:
            seen = observed_facts(ev.program, ev.observation, ev.expected)
            if seen:  # what the worker saw happen needs no replay, and names its op itself
                observed[r.id] = seen
                same = SAME_AS_BUG.get(seen[0].key[:3])
                matches[r.id] = [Match(same, 1.0)] if same else []
                continue
            matches[r.id] = match_evidence(ev.program, ev.observation, ev.expected, replays)
            if r.id in fresh and not matches[r.id] and not _order_findings(ev):
                observed[r.id] = [Finding(ENGINE, None, "state_left_over")]
                state.add(r.id)
        else:
            matches[r.id] = match_signatures(r.id, r.reason, passed)
    considered = {check: list(found) for check, found in matches.items()}

    passed_graphs = [_as_run(*graphs[c]) for c in passed if graphs and c in graphs]
    passed_graphs += [(e.program, e.expected) for e in experiments
                      if e.passed and (getattr(e, "fresh_for", None) is None or e.fresh_for in state)]

    @functools.cache
    def contradictions(bug_id: str) -> int:
        return sum(fails(bug_id, program, expected, replays) for program, expected in passed_graphs)

    located: dict[str, list[Finding]] = {}

    def locate(r: CheckResult) -> list[Finding]:
        """The rule mutations that explain ``r`` and that no passing graph contradicts."""
        if r.id in observed:
            return observed[r.id]
        if r.id not in located:
            ev = r.evidence
            try:
                found = _tie_finding(r) or localise(ev.program, ev.observation, ev.expected)
                located[r.id] = [f for f in found if not refuted(f)]
            except Exception:  # noqa: BLE001 -- naming is a bonus: an unnamed group still reports the failure
                located[r.id] = []
        return located[r.id]

    refuted = Refuter(passed_graphs)
    # A catalogued bug whose mutant fails a graph this engine passes gives way to one that does not, or to
    # a wrong rule that explains the failure; when nothing else does, it stays, but only as likely (the
    # same mistake written another way can differ on a graph or two). An error fits a bug by its kind
    # alone: when every bug it fits is contradicted, the error is left unexplained rather than misnamed.
    for r in failing:
        found = matches.get(r.id)
        if not found or r.evidence is None or r.id in observed:
            continue
        clean = [m for m in found if not contradictions(m.bug)]
        error = r.evidence.observation is not None and r.evidence.observation.error is not None
        if clean or error or locate(r):
            matches[r.id] = clean

    groups = _group(matches, contradictions)
    assigned = {check: bug_id for bug_id, checks in groups for check in checks}
    causes = [_cause(bug_id, checks, results) for bug_id, checks in groups]
    loose = unexplained([r for r in failing if r.id not in assigned], locate)
    causes = _absorbed(causes + [c for c in loose if c.get("symptom")],
                       [c for c in loose if not c.get("symptom")], replays)
    causes = _state_first(causes)
    levels = {r.id: r.level for r in results}
    for cause in causes:
        cause["points"] = round(sum((points or {}).get(c, 0.0) for c in cause["checks"]), 2)
        if cause["checks"]:
            # Placed by the checks it explains: an op of the core level that fails only extension
            # graphs (or a bug seen only by a follow-up probe) is no core failure.
            cause["level"] = min((levels[c] for c in cause["checks"]), key=LEVELS.index)
    by_id = {r.id: r for r in results}
    for cause in causes:
        cause["confidence"], cause["probes"] = confidence(
            cause, by_id, observed, considered, located, contradictions, refuted, experiments, replays, passed_graphs)
        cause.pop("_finding", None)
    # What costs only memory or time (a graph kept alive, a backward slower than linear) after every
    # wrong result, whatever their levels: an engine that never attempted the memory follow-up must not be
    # sent there before a wrong gradient of an extension op. Then core before follow-ups before extensions
    # (each level builds on the one before); within a level, a wrong result before a convention, then
    # confirmed before likely before unexplained, then the most fundamental (in the core, the engine's
    # structure before its ops: a likely structural cause must not hide a confirmed wrong rule), a named
    # cause before a vague one; points only break ties. A core method that is missing comes before them all.
    reasons = {r.id: r.reason for r in results}
    causes.sort(key=lambda c: (_cost(c, reasons), max(_tier(c), 1), _secondary(c),
                               CONFIDENCES.index(c["confidence"]), _tier(c), _vague(c), -c["points"], -len(c["checks"])))
    causes = missing_members(results, points) + causes
    # An integrity finding costs every point: the bug behind it comes first.
    flagged = [m.bug for m in match_violations(violations)]
    causes = ([next((c for c in causes if c["bug"] == b), None) or {**_cause(b, [], results), "points": 0.0}
               for b in flagged] + [c for c in causes if c["bug"] not in flagged])

    # Checks a cause absorbed without a match of their own are still charged to its bug.
    absorbed = {c: cause["bug"] for cause in causes if cause["bug"] for c in cause["checks"] if not matches.get(c)}
    out = []
    for r in results:
        if r.id in absorbed:
            r = dataclasses.replace(r, diagnosis=(absorbed[r.id],))
        elif r.id in matches and matches[r.id]:
            first = assigned.get(r.id)
            ids = [m.bug for m in sorted(matches[r.id], key=lambda m: (m.bug != first, -m.fit, _ORDER[m.bug]))]
            r = dataclasses.replace(r, diagnosis=tuple(ids))
        out.append(r)
    # The grouping works on dicts that carry its bookkeeping; the report holds the typed causes.
    return out, tuple(RootCause.from_dict(cause) for cause in causes)


SAME_AS_BUG: Final[dict[tuple[str, int | None, str], str]] = {("relu", 0, "in_place"): "relu_in_place"}
"""Facts the worker observes that are a catalogued bug: the cause is that bug, seen happen."""

SECONDARY: Final = ("memory", "saved_tensors", "linearity", "conventions", "grad_types")
"""Concepts about what an engine keeps, how long it takes or which of torch's conventions it follows, rather
than whether what it computes is right: after a wrong result of the same tier."""

COSTS: Final = frozenset({("followups.memory_release", "graph_alive"), ("core.linear_time", "superlinear")})
"""(check, reason) of the failures that cost only memory or time, the engine's results being right: after
every wrong result. The same checks fail for wrong results too (a wrong gradient on the timing graph)."""


def _state_first(causes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """With state left over between graphs (a failing graph right when a fresh process runs it first), the
    failures no rule explains join that cause: they are what the state did to later graphs. No cause keeps a
    snippet: one graph alone may pass, and which earlier graphs break it (Python reusing the ids of freed
    objects, say) is not something a few lines can promise to repeat."""
    state = next((c for c in causes if c.get("symptom") == "state_left_over"), None)
    if state is None:
        return causes
    joined = [c for c in causes if c is not state and _vague(c)]
    state["checks"] = [*state["checks"], *(check for c in joined for check in c["checks"])]
    for cause in causes:
        # Any graph's failure may need what ran before it: a snippet of it alone need not fail.
        cause["snippet"] = ""
    state["explanation"] = (f"{state['name']}. Run first in fresh workers, the failing graph comes out right every time, so no op's "
                            f"rule is wrong on it: something one backward() leaves behind changes the next. To see it, run "
                            f"backward on a few graphs in a row in one process and compare each with torch.")
    return [c for c in causes if c not in joined]


_ORDER_BLIND: Final = frozenset({"wrong_rule", "scaled"})
"""Findings whose wrong gradient is the same in whatever order the contributions arrive: not what a fresh run can hide."""


def _order_findings(ev: Any) -> list[Finding]:
    """The rule mutations reproducing ``ev`` whose effect depends on the order contributions arrive in; a
    localisation that cannot run on the graph counts as one (the state is claimed only when nothing else can be)."""
    try:
        return [f for f in localise(ev.program, ev.observation, ev.expected) if f.symptom not in _ORDER_BLIND]
    except Exception:  # noqa: BLE001 -- naming is a bonus; a claim needs every rival ruled out
        return [Finding(ENGINE, None, "wrong_rule")]


def _secondary(cause: dict[str, Any]) -> bool:
    return cause.get("concept") in SECONDARY


def _cost(cause: dict[str, Any], reasons: dict[str, str]) -> bool:
    if cause.get("concept") == "saved_tensors":
        return True
    return bool(cause["checks"]) and all((c, reasons.get(c)) in COSTS for c in cause["checks"])


LARGEST_GRAPH = 20_000
"""Steps of the largest failing graph whose torch outcome the diagnosis computes when its check did not."""


def _with_torch_outcome(r: CheckResult) -> CheckResult:
    """``r`` with torch's outcome in its evidence where the check had no need of it (a timing check's wide graph
    whose gradient it knows in closed form): a wrong gradient there is then matched like any other."""
    ev = r.evidence
    if (r.outcome not in FAILING or ev is None or ev.expected is not None or ev.observation is None
            or ev.observation.error is not None or len(ev.program.steps) > LARGEST_GRAPH):
        return r
    try:
        expected = ev.program.run_torch()
    except Exception:  # noqa: BLE001 -- then the failure is grouped as it was, without a replay
        return r
    return dataclasses.replace(r, evidence=dataclasses.replace(ev, expected=expected))


def _group(matches: dict[str, list[Match]], contradictions: Callable[[str], int]) -> list[tuple[str, list[str]]]:
    """Greedy cover: the bug that is a best fit for the most failures takes them, then the next.

    Between bugs that explain as many failures, the one contradicted by fewer passing checks wins.
    """
    best: dict[str, set[str]] = {}
    fit: dict[tuple[str, str], float] = {}
    for check, found in matches.items():
        if not found:
            continue
        top = max(m.fit for m in found)
        best[check] = {m.bug for m in found if m.fit >= top - BEST}
        fit.update({(check, m.bug): m.fit for m in found})
    groups = []
    while best:
        counts: dict[str, list[str]] = {}
        for check, bugs in best.items():
            for b in bugs:
                counts.setdefault(b, []).append(check)
        most = max(len(checks) for checks in counts.values())
        tied = [b for b in counts if len(counts[b]) == most]
        chosen = min(tied, key=lambda b: (contradictions(b) if len(tied) > 1 else 0,
                                          -sum(fit[(c, b)] for c in counts[b]), _ORDER[b]))
        groups.append((chosen, counts[chosen]))
        for check in counts[chosen]:
            del best[check]
    return groups


def _cause(bug_id: str, checks: list[str], results: Sequence[CheckResult]) -> dict[str, Any]:
    b = bug(bug_id)
    by_id = {r.id: r for r in results}
    return {"bug": b.id, "name": b.name, "concept": b.concept, "explanation": b.explanation, "hint": b.hint,
            "checks": list(checks), "snippet": _snippet([by_id[c] for c in checks]),
            "op": None, "operand": None, "symptom": None}


def _absorbed(named: list[dict[str, Any]], unnamed: list[dict[str, Any]], replays: dict) -> list[dict[str, Any]]:
    """``unnamed`` without the groups a catalogued cause explains: its mutant fails their smallest graph too.

    Such a group is the same bug showing differently (another op downstream of the wrong rule); its
    checks join the cause instead of standing as a cause of their own.
    """
    def explains(cause: dict[str, Any], program: Program, expected: Outcome) -> bool:
        if cause["bug"]:
            return fails(cause["bug"], program, expected, replays)
        finding = cause.get("_finding")
        return finding is not None and finding.symptom != "wrong_rule" and contradicted(finding, program, expected)

    named = _composed(named)
    # A group joins the cause with the most failures of its own among those that explain it: a bug seen on
    # one probe is weaker evidence than one seen on many graphs.
    by_evidence = sorted(named, key=lambda c: -len(c["checks"]))
    left = []
    for group in unnamed:
        program, expected = group.pop("_graph", (None, None))
        if program is not None and expected is not None:
            owner = next((c for c in by_evidence if explains(c, program, expected)), None)
            if owner is not None:
                owner["checks"] = [*owner["checks"], *group["checks"]]
                continue
        left.append(group)
    return named + left


def _composed(causes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Causes on an op the engine may build from others (``a / b`` as ``a * b ** -1``) join the cause on that
    other op when its wrong rule, run through the composition, reproduces their graph: the composite op
    only shows the primitive's bug."""
    kept = []
    for cause in causes:
        owner = None
        graphs = cause.get("_observed") or []
        if cause["bug"] is None and graphs:
            owner = next((c for c in causes if c is not cause and c.get("_finding") is not None
                          and sum(explains_composed(c["_finding"], *g) for g in graphs) * 2 > len(graphs)), None)
        if owner is not None:
            owner["checks"] = [*owner["checks"], *cause["checks"]]
        else:
            kept.append(cause)
    for cause in causes:
        cause.pop("_observed", None)
    return kept


def _snippet(results: Sequence[CheckResult]) -> str:
    """The snippet of the smallest failing graph among ``results`` ('' when none ran a graph)."""
    shown = [r for r in results if r.evidence is not None and "snippet" in r.details]
    if not shown:
        return ""
    return min(shown, key=lambda r: size(r.evidence.program)).details["snippet"]


STRUCTURE = ("order", "accumulation", "requires_grad", "linearity")
"""Concepts of the engine itself (its walk, its bookkeeping) rather than of one op's rule."""


def _as_run(program: Program, expected: Outcome) -> tuple[Program, Outcome]:
    """A check's graph as the check ran it: with the ``.sum()`` the grader appends to a one-element output that is
    not 0-d (a replay of the graph without it can fail where the engine passed what it was given)."""
    rooted = scalar_root(program, expected)
    return (program, expected) if rooted is program else (rooted, rooted.run_torch())


def _tier(cause: dict[str, Any]) -> int:
    """0 core structure, 1 core ops, 2 follow-ups, 3 extensions, 4 unplaced."""
    level = cause.get("level") or (bug(cause["bug"]).level if cause["bug"] else None)
    if level not in LEVELS:
        return len(LEVELS) + 1
    if level == "core":
        # An unnamed group takes its concept from a check, not from what is wrong: it is no structure claim.
        named = cause["bug"] is not None or cause.get("symptom") is not None
        return 0 if named and cause.get("concept") in STRUCTURE else 1
    return LEVELS.index(level) + 1


def _vague(cause: dict[str, Any]) -> bool:
    return cause["bug"] is None and cause.get("symptom") in (None, "wrong_rule")


def _tie_finding(r: CheckResult) -> list[Finding]:
    """The ties checks judge a convention torch's outcome alone cannot: their failure names itself."""
    if r.id.startswith("extensions.ties.") and r.reason == "tied_all":
        return [Finding(r.id.removeprefix("extensions.ties."), 0, "tied_all")]
    return []
