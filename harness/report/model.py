"""What a grade produces: check results, the report, and the exit code it implies."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from harness.vocabulary import FAILING, INFORMATIONAL, OUTCOMES, STATUSES

__all__ = ["CheckResult", "Report", "OUTCOMES", "STATUSES", "exit_code", "combine", "changes"]

CANDIDATE_TEXT_FIELDS: Final = ("message", "checks[].message", "checks[].details", "output", "root_causes[].snippet",
                                 "root_causes[].explanation", "integrity.violations",
                                 "integrity.review[].construct", "integrity.review[].why")
"""JSON fields whose text may have been written by the submission."""


@dataclass(frozen=True)
class CheckResult:
    id: str
    level: str
    concept: str
    title: str
    outcome: str
    message: str = ""
    points: float = 0.0
    max_points: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    """Worst element, snippet, hint, seed, timings: whatever explains the outcome."""
    seconds: float = 0.0
    diagnosis: tuple[str, ...] = ()
    """Ids of catalogued bugs that reproduce this failure, best fit first."""
    evidence: Any = field(default=None, compare=False, repr=False)
    """The failing run as objects (``checks.context.Evidence``), for the diagnosis; never serialised."""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("evidence")
        out["points"] = round(self.points, 2)
        out["max_points"] = round(self.max_points, 2)
        out["seconds"] = round(self.seconds, 3)
        out["diagnosis"] = list(self.diagnosis)
        return out


@dataclass(frozen=True)
class Report:
    file: str
    status: str
    score: float
    max_score: float
    levels: dict[str, dict[str, float]]
    checks: tuple[CheckResult, ...]
    integrity_violations: tuple[str, ...] = ()
    message: str = ""
    """Why a submission could not be graded (status error/timeout)."""
    seed: int = 0
    interview: dict[str, Any] = field(default_factory=dict)
    output: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    grader_version: str = ""
    integrity_review: tuple[dict[str, Any], ...] = ()
    """Suspicious constructs that are not proof: ``{"line", "construct", "why"}`` each."""
    root_causes: tuple[dict[str, Any], ...] = ()
    """Failures grouped by the bug that explains them, the one to fix first first."""
    isolation: str = "basic"
    """How the submission was confined: "sandbox" (bubblewrap) or "basic"."""
    isolation_note: str = ""
    """Why the isolation is only basic, when it is."""
    source_sha256: str = ""
    diagnosis_error: str = ""
    """Why the root causes are missing when the diagnosis itself failed; the verdicts and score stand."""
    source_note: str = ""
    """How the source was read when it was not simply the file: a notebook's code cells, what was left out."""
    variant: str = "tensor"
    """Which reading of the task was graded: "tensor" (the whole engine) or "function" (torch.autograd.Functions)."""
    agreements: dict[str, str] = field(default_factory=dict)
    """What the interview agreed about the interface (``broadcasting``, ``upstream``, ``second_backward``);
    empty when nothing departs from the contract."""

    def saved_tensors(self) -> dict[str, Any] | None:
        """The saved-tensor audit's table (kept vs needed per graph, in bytes), when the audit ran."""
        for check in self.checks:
            if check.id == "followups.saved_tensors" and isinstance(check.details.get("saved_tensors"), dict):
                return check.details["saved_tensors"]
        return None

    def to_dict(self) -> dict[str, Any]:
        """The JSON report. The fields of the published contract always exist; others may be added."""
        return {
            "file": self.file,
            "status": self.status,
            "message": self.message,
            "score": round(self.score, 2),
            "max_score": round(self.max_score, 2),
            "levels": {k: {"score": round(v["score"], 2), "max_score": round(v["max_score"], 2)}
                       for k, v in self.levels.items()},
            "interview": self.interview,
            "checks": [c.to_dict() for c in self.checks],
            "integrity": {"violations": list(self.integrity_violations),
                          "review": [dict(entry) for entry in self.integrity_review]},
            "root_causes": [dict(cause) for cause in self.root_causes],
            "diagnosis_error": self.diagnosis_error,
            "isolation": self.isolation,
            "isolation_note": self.isolation_note,
            "source_sha256": self.source_sha256,
            "source_note": self.source_note,
            "agreements": dict(self.agreements),
            "variant": self.variant,
            "saved_tensors": self.saved_tensors(),
            "seed": self.seed,
            "output": self.output,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "grader_version": self.grader_version,
            # Text in these fields may come from the submission (its exceptions, output,
            # values): a consumer must escape it wherever it shows it.
            "candidate_text": list(CANDIDATE_TEXT_FIELDS),
        }


def combine(first: Report, rest: Report) -> Report:
    """One report from two grades of the same file over different levels (``--watch`` grades core first).

    ``first`` holds the core level and decides the interview; ``rest`` adds the other levels. A
    violation found in either part makes the whole an integrity violation scoring 0, as one grade of
    every level would have; a review finding in either part holds the interview bar.
    """
    levels = {**rest.levels, **first.levels}
    order = list(rest.levels) or list(levels)
    levels = {level: levels[level] for level in sorted(levels, key=lambda l: order.index(l) if l in order else -1)}
    causes: dict[Any, dict[str, Any]] = {}
    for cause in (*first.root_causes, *rest.root_causes):
        key = cause.get("bug") or cause.get("name")
        if key in causes:
            merged = causes[key]
            causes[key] = {**merged, "checks": [*merged.get("checks", []), *cause.get("checks", [])],
                           "points": round(merged.get("points", 0.0) + cause.get("points", 0.0), 2)}
        else:
            causes[key] = dict(cause)
    statuses = ("integrity_violation", "timeout", "error", "graded")
    status = min(first.status, rest.status, key=statuses.index)
    violations = tuple(dict.fromkeys(first.integrity_violations + rest.integrity_violations))
    checks = first.checks + rest.checks
    interview = dict(first.interview)
    if violations or status != "graded":
        # A violation (or a failure to grade) in either part is the whole file's: nothing scores, and
        # the interview bar, decided by the core part alone, is not passed.
        status = "integrity_violation" if violations else status
        levels = {level: {**v, "score": 0.0} for level, v in levels.items()}
        checks = tuple(dataclasses.replace(c, points=0.0) for c in checks)
        if interview:
            interview.update(passed=False, core_score=0.0)
    needs_review = bool(first.integrity_review or rest.integrity_review)
    if interview and needs_review and not interview.get("needs_review"):
        interview.update(passed=False, needs_review=True)
    return Report(
        file=first.file, status=status, score=sum(v["score"] for v in levels.values()),
        max_score=sum(v["max_score"] for v in levels.values()), levels=levels, checks=checks,
        integrity_violations=violations,
        message=first.message or rest.message, seed=first.seed, interview=interview,
        output={k: first.output.get(k, "") + rest.output.get(k, "") for k in ("stdout", "stderr")},
        timings={**rest.timings, **first.timings}, grader_version=first.grader_version,
        integrity_review=tuple({(e.get("line"), e.get("construct")): e for e in
                                (*first.integrity_review, *rest.integrity_review)}.values()),
        root_causes=tuple(sorted(causes.values(), key=lambda c: -c.get("points", 0.0))),
        isolation=first.isolation, isolation_note=first.isolation_note, source_sha256=first.source_sha256,
        diagnosis_error="; ".join(e for e in (first.diagnosis_error, rest.diagnosis_error) if e),
        source_note=first.source_note, agreements=first.agreements, variant=first.variant,
    )


def changes(before: Report, after: Report) -> list[str]:
    """What changed between two grades of one file, for ``--watch``: one line per kind of change."""
    old = {c.id: c.outcome for c in before.checks}
    lines = []
    for verb, test in (("pass", lambda o, n: n == "passed" and o != "passed"),
                       ("fail", lambda o, n: n in FAILING and o == "passed")):
        ids = [c.id for c in after.checks if c.id in old and test(old[c.id], c.outcome)]
        if ids:
            shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            counted = f"1 check now {verb}s" if len(ids) == 1 else f"{len(ids)} checks now {verb}"
            lines.append(f"{counted}: {shown}")
    delta = after.score - before.score
    if abs(delta) >= 0.05:
        lines.append(f"score {before.score:.1f} -> {after.score:.1f} ({delta:+.1f})")
    return lines or ["no check changed its outcome"]


def exit_code(report: Report) -> int:
    """0 every attempted check passed; 1 some check failed; 3 not gradable; 4 integrity violation.

    Informational checks (``levels.INFORMATIONAL``) count in the score, never in the exit code.
    """
    if report.status == "integrity_violation":
        return 4
    if report.status in ("error", "timeout"):
        return 3
    if any(c.outcome in FAILING and c.id not in INFORMATIONAL for c in report.checks):
        return 1
    return 0
