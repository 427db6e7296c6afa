"""A batch's summary: one row per submission, the maximum points, counts, and per-concept pass rates.

Everything here reads ``Report``s; a batch reads them back from its ``results/`` folder
(``Report.from_dict``), so a resumed batch summarises results it did not grade itself. The summary
is what ``summary.json`` holds and what every other batch export is drawn from.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from harness.report.model import Report
from harness.vocabulary import FAILING

__all__ = ["summarise", "summary_row", "concept_rates"]


def summary_row(sid: str, report: Report) -> dict[str, Any]:
    """One submission's line of the summary (as JSON rounds it: a row read back from JSON is the same)."""
    interview = report.interview
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
        "interview_passed": interview.passed if interview is not None else None,
        "needs_review": interview.needs_review if interview is not None else False,
        "gates_failed": list(interview.gates_failed) if interview is not None else [],
        "review_flags": len(report.integrity_review),
        "violations": len(report.integrity_violations),
        "checks_failed": sum(c.outcome in FAILING for c in report.checks),
        "levels": {level: round(v["score"], 2) for level, v in report.levels.items()},
        "concepts": concepts,
        # a catalogued bug by its id; a failure no catalogued bug explains by its name
        "root_causes": [str(cause.key or "") for cause in report.root_causes],
        "source_sha256": report.source_sha256,
        "seconds": timings.get("wall", timings.get("total", 0.0)),
    }


def summarise(reports: Mapping[str, Report], *, settings: Mapping[str, Any],
              similarity: Sequence[Mapping[str, Any]] = (), pending: Sequence[str] = ()) -> dict[str, Any]:
    """The summary of a batch: its settings, the maximum row, one row per report (in the given order),
    per-concept pass rates over the graded submissions, similar pairs, and what was left ungraded."""
    rows = [summary_row(sid, report) for sid, report in reports.items()]
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
                  needs_review=sum(bool(r["needs_review"]) or r["review_flags"] > 0 for r in rows),
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


def concept_rates(reports: Iterable[Report]) -> dict[str, dict[str, Any]]:
    """Per concept over the graded submissions: how many passed every check of it, and the share of its checks passed.

    A check not attempted counts as not passed: a cohort that skips a concept misses it.
    """
    rates: dict[str, dict[str, Any]] = {}
    graded = [r for r in reports if r.status == "graded"]
    for report in graded:
        by_concept: dict[str, list[str]] = {}
        for c in report.checks:
            by_concept.setdefault(c.concept, []).append(c.outcome)
        for concept, outcomes in by_concept.items():
            entry = rates.setdefault(concept, {"candidates": 0, "all_passed": 0, "checks": 0, "checks_passed": 0})
            entry["candidates"] += 1
            entry["all_passed"] += all(o == "passed" for o in outcomes)
            entry["checks"] += len(outcomes)
            entry["checks_passed"] += sum(o == "passed" for o in outcomes)
    for entry in rates.values():
        entry["pass_rate"] = round(entry["all_passed"] / entry["candidates"], 3)
        entry["check_pass_rate"] = round(entry["checks_passed"] / entry["checks"], 3) if entry["checks"] else 0.0
    return dict(sorted(rates.items(), key=lambda kv: (kv[1]["pass_rate"], kv[0])))
