"""A batch's summary: one row per submission, the maximum points, counts, and per-concept pass rates.

Everything here reads ``Report``s; a batch reads them back from its ``results/`` folder
(``Report.from_dict``), so a resumed batch summarises results it did not grade itself. The summary
is what ``summary.json`` holds and what every other batch export is drawn from.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from harness.report.decisions import Decision, decided
from harness.report.model import Report, RootCause
from harness.vocabulary import FAILING, LEVELS

__all__ = ["summarise", "summary_row", "concept_rates", "cause_title", "TITLE_CHARS"]

TITLE_CHARS = 48
"""The longest short title of a root cause: what a table cell of a cohort shows (the whole name on hover)."""
NOT_RUN = ("not_attempted", "skipped")
"""Outcomes of checks that never ran: no evidence either way about a concept."""


def cause_title(cause: RootCause) -> str:
    """A root cause's short title: its name, or the name's head when the name is a sentence, within
    ``TITLE_CHARS`` characters (cut at a word, with an ellipsis)."""
    name = " ".join(str(cause.name or cause.bug or "").split())
    head, sep, _ = name.partition(": ")
    if sep and len(re.findall(r"[A-Za-z]{2,}", head)) >= 3:  # a sentence's head, not an op like `a - b`
        name = head
    if len(name) <= TITLE_CHARS:
        return name
    cut = name[:TITLE_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + "\u2026"


def summary_row(sid: str, report: Report, decision: Decision | None = None) -> dict[str, Any]:
    """One submission's line of the summary (as JSON rounds it: a row read back from JSON is the same), with a
    person's ``decision`` applied (``report.decisions``)."""
    interview = report.interview
    final = decided(report, decision)
    concepts: dict[str, float] = {}
    for c in report.checks:
        concepts[c.concept] = round(concepts.get(c.concept, 0.0) + round(c.points, 2), 2)
    timings = {k: round(v, 3) for k, v in report.timings.items()}
    return {
        "id": sid,
        "file": report.file,
        "status": report.status,
        "message": report.message,
        "score": round(report.score, 2),
        "max_score": round(report.max_score, 2),
        "automatic_score": final.automatic_score,
        "final_score": final.final_score,
        "interview_passed": final.interview_passed,
        "needs_review": final.needs_review,
        "gates_failed": list(interview.gates_failed) if interview is not None else [],
        "review_flags": len(report.integrity_review),
        "violations": len(report.integrity_violations),
        "checks_failed": sum(c.outcome in FAILING for c in report.checks),
        "levels": {level: round(v["score"], 2) for level, v in report.levels.items()},
        "concepts": concepts,
        # a catalogued bug by its id; a failure no catalogued bug explains by its name
        "root_causes": [str(cause.key or "") for cause in report.root_causes],
        "root_cause_titles": [cause_title(cause) for cause in report.root_causes],
        "source_sha256": report.source_sha256,
        "seconds": timings.get("wall", timings.get("total", 0.0)),
        "decision": final.to_dict(),
        "comment": final.comment if final.decision is not None and not final.decision.empty else "",
    }


def summarise(reports: Mapping[str, Report], *, settings: Mapping[str, Any],
              similarity: Sequence[Mapping[str, Any]] = (), pending: Sequence[str] = (),
              decisions: Mapping[str, Decision] | None = None) -> dict[str, Any]:
    """The summary of a batch: its settings, the maximum row, one row per report (in the given order, with
    the ``decisions`` people made), per-concept pass rates over the graded submissions, similar pairs, and
    what was left ungraded."""
    decisions = decisions or {}
    rows = [summary_row(sid, report, decisions.get(sid)) for sid, report in reports.items()]
    maximum: dict[str, Any] = {"score": 0.0, "levels": {}, "concepts": {}}
    for report in reports.values():
        maximum["score"] = max(maximum["score"], round(report.max_score, 2))
        for level, v in report.levels.items():
            maximum["levels"][level] = max(maximum["levels"].get(level, 0.0), round(v["max_score"], 2))
        per_concept: dict[str, float] = {}
        for c in report.checks:
            per_concept[c.concept] = per_concept.get(c.concept, 0.0) + round(c.max_points, 2)
        for concept, points in per_concept.items():
            maximum["concepts"][concept] = round(max(maximum["concepts"].get(concept, 0.0), points), 2)
    counts = {status: sum(r["status"] == status for r in rows)
              for status in ("graded", "error", "timeout", "integrity_violation")}
    counts.update(total=len(rows), interview_passed=sum(bool(r["interview_passed"]) for r in rows),
                  needs_review=sum(_waits_for_review(r) for r in rows),
                  decided=sum(bool(r["decision"] and r["decision"]["applied"]) for r in rows),
                  decisions_outdated=sum(bool(r["decision"] and not r["decision"]["current"]) for r in rows),
                  pending=len(pending))
    return {
        "settings": dict(settings),
        "complete": not pending,
        "pending": list(pending),
        "counts": counts,
        "maximum": maximum,
        "submissions": rows,
        "concepts": concept_rates(reports.values()),
        "similarity": [dict(pair) for pair in similarity],
    }


def _waits_for_review(row: Mapping[str, Any]) -> bool:
    """Review entries nobody has accepted yet (a batch that did not grade the core level has no bar to hold)."""
    accepted = bool(row["decision"] and row["decision"]["applied"] and row["decision"]["accept_review"])
    return not accepted and (bool(row["needs_review"]) or row["review_flags"] > 0)


def concept_rates(reports: Iterable[Report]) -> dict[str, dict[str, Any]]:
    """Per concept over the graded submissions that attempted it: how many passed every check of it they
    attempted, and the share of its attempted checks passed.

    A check not attempted (or skipped) says nothing about a concept, so it is left out: a concept nobody
    attempted has no rate rather than a rate of 0. Concepts come by level (the lowest level of their
    checks: core first), then the ones the cohort misses most.
    """
    rates: dict[str, dict[str, Any]] = {}
    graded = [r for r in reports if r.status == "graded"]
    for report in graded:
        by_concept: dict[str, list[str]] = {}
        for c in report.checks:
            by_concept.setdefault(c.concept, []).append(c.outcome)
            entry = rates.setdefault(c.concept, {"level": c.level, "candidates": 0, "attempted": 0,
                                                 "all_passed": 0, "checks": 0, "checks_passed": 0})
            if c.level in LEVELS and LEVELS.index(c.level) < LEVELS.index(entry["level"]):
                entry["level"] = c.level
        for concept, outcomes in by_concept.items():
            entry = rates[concept]
            entry["candidates"] += 1
            ran = [o for o in outcomes if o not in NOT_RUN]
            if ran:
                entry["attempted"] += 1
                entry["all_passed"] += all(o == "passed" for o in ran)
            entry["checks"] += len(ran)
            entry["checks_passed"] += sum(o == "passed" for o in ran)
    for entry in rates.values():
        entry["pass_rate"] = round(entry["all_passed"] / entry["attempted"], 3) if entry["attempted"] else None
        entry["check_pass_rate"] = round(entry["checks_passed"] / entry["checks"], 3) if entry["checks"] else None

    def order(item: tuple[str, dict[str, Any]]) -> tuple:
        concept, entry = item
        level = LEVELS.index(entry["level"]) if entry["level"] in LEVELS else len(LEVELS)
        rate = entry["pass_rate"]
        return (level, rate is None, rate if rate is not None else 0.0, concept)

    return dict(sorted(rates.items(), key=order))
