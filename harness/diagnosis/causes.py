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
from typing import Any, Callable, Mapping, Sequence

from harness.diagnosis.catalogue import BUGS, bug
from harness.diagnosis.matching import Match, agree, fails, match_evidence, match_signatures, match_violations
from harness.ops import LEVELS, OPS
from harness.program import Outcome, Program
from harness.report.model import CheckResult
from harness.vocabulary import FAILING

__all__ = ["diagnose"]

BEST = 0.01
"""Matches within this much of a check's best fit count as equally good."""

_ORDER = {b.id: i for i, b in enumerate(BUGS)}


def diagnose(results: Sequence[CheckResult], violations: Sequence[str] = (),
             points: Mapping[str, float] | None = None,
             graphs: Mapping[str, tuple[Program, Outcome]] | None = None,
             ) -> tuple[list[CheckResult], tuple[dict[str, Any], ...]]:
    """The results with ``diagnosis`` filled in, and the root causes, the one to fix first first.

    ``points`` (check id -> its points in the rubric) orders the causes by the points their
    checks cost; without it, or on a tie, the largest group comes first. ``graphs`` (check id ->
    the program it runs and torch's outcome) settles ties between bugs that explain the same
    failures: a bug whose mutant would fail a check this engine passed is the worse fit.
    """
    passed = [r.id for r in results if r.outcome == "passed"]
    failing = [r for r in results if r.outcome in FAILING]
    replays: dict = {}
    matches: dict[str, list[Match]] = {}
    for r in failing:
        ev = r.evidence
        if ev is not None and ev.observation is not None and ev.expected is not None:
            matches[r.id] = match_evidence(ev.program, ev.observation, ev.expected, replays)
        else:
            matches[r.id] = match_signatures(r.id, r.message, passed)

    passed_graphs = [graphs[c] for c in passed if graphs and c in graphs]

    @functools.cache
    def contradictions(bug_id: str) -> int:
        return sum(fails(bug_id, program, expected, replays) for program, expected in passed_graphs)

    groups = _group(matches, contradictions)
    assigned = {check: bug_id for bug_id, checks in groups for check in checks}
    causes = [_cause(bug_id, checks, results) for bug_id, checks in groups]
    causes += _unexplained([r for r in failing if r.id not in assigned])
    for cause in causes:
        cause["points"] = round(sum((points or {}).get(c, 0.0) for c in cause["checks"]), 2)
    causes.sort(key=lambda c: (-c["points"], -len(c["checks"]), c["bug"] is None, _level(c)))
    # An integrity finding costs every point: the bug behind it comes first.
    flagged = [m.bug for m in match_violations(violations)]
    causes = ([next((c for c in causes if c["bug"] == b), None) or {**_cause(b, [], results), "points": 0.0}
               for b in flagged] + [c for c in causes if c["bug"] not in flagged])

    out = []
    for r in results:
        if r.id in matches and matches[r.id]:
            first = assigned.get(r.id)
            ids = [m.bug for m in sorted(matches[r.id], key=lambda m: (m.bug != first, -m.fit, _ORDER[m.bug]))]
            r = dataclasses.replace(r, diagnosis=tuple(ids))
        out.append(r)
    return out, tuple(causes)


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
            "checks": list(checks), "snippet": _snippet([by_id[c] for c in checks])}


def _snippet(results: Sequence[CheckResult]) -> str:
    """The snippet of the smallest failing graph among ``results`` ('' when none ran a graph)."""
    shown = [r for r in results if r.evidence is not None and "snippet" in r.details]
    if not shown:
        return ""
    return min(shown, key=lambda r: _size(r.evidence.program)).details["snippet"]


def _size(program: Any) -> tuple[int, int]:
    return len(program.steps), sum(leaf.value.numel() for leaf in program.leaves)


def _level(cause: dict[str, Any]) -> int:
    return LEVELS.index(bug(cause["bug"]).level) if cause["bug"] else len(LEVELS)


# ---- failures no catalogued bug explains ---------------------------------------------------


def _unexplained(results: Sequence[CheckResult]) -> list[dict[str, Any]]:
    """Failures with a graph but no matching bug, grouped by the op nearest what went wrong in each.

    The group is named after the op and the concept of its smallest failing graph; it names no bug.
    """
    groups: dict[str, list[CheckResult]] = {}
    for r in results:
        ev = r.evidence
        if ev is None:
            continue
        op = _blamed_op(ev.program, ev.observation, ev.expected)
        if op is not None:
            groups.setdefault(op, []).append(r)
    causes = []
    for op, members in groups.items():
        smallest = min(members, key=lambda r: _size(r.evidence.program))
        syntax = OPS[op].render([f"x{i}" for i in range(len(OPS[op].slots))]) if op in OPS else op
        causes.append({
            "bug": None,
            "name": f"{smallest.concept} failures around {syntax}",
            "concept": smallest.concept,
            "explanation": (f"No catalogued bug reproduces these failures. The op nearest to what goes wrong "
                            f"is {syntax}; the smallest failing graph is {smallest.evidence.program.summary()}, "
                            f"where {_first_line(smallest.message)}"),
            "hint": smallest.details.get("hint", ""),
            "checks": [r.id for r in members],
            "snippet": smallest.details.get("snippet", ""),
        })
    return causes


def _first_line(message: str) -> str:
    line = message.splitlines()[0] if message else "it fails"
    return line.removeprefix("smallest failing graph: ").split(" -> ", 1)[-1]


def _blamed_op(program: Any, obs: Any, expected: Any) -> str | None:
    """The op nearest the first thing that went wrong: the first wrong step, else the first consumer of
    the first leaf with a wrong gradient (sum and + only when nothing else consumes it)."""
    if obs is not None and expected is not None and obs.error is None:
        for step in program.steps:
            if step.name in obs.values and not agree(obs.values[step.name], expected.values[step.name]):
                return step.op
        for leaf in program.leaves:
            if leaf.name in obs.grads and not agree(obs.grads[leaf.name], expected.grads.get(leaf.name)):
                consumers = [s.op for s in program.steps if leaf.name in s.args]
                plain = [op for op in consumers if op not in ("sum", "add")]
                return (plain or consumers or [None])[0]
    if obs is not None and obs.error is not None:
        where = str(obs.error.get("where", ""))
        if where.startswith("forward: "):
            name = where.removeprefix("forward: ")
            return next((s.op for s in program.steps if s.name == name), None)
    ops = [s.op for s in program.steps]
    plain = [op for op in ops if op not in ("sum", "add")]
    return (plain or ops or [None])[0]
