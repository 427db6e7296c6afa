"""A person's decisions about a candidate, and what they make of the automatic grade.

The grader's verdict is a report (``Report``); an interviewer's decision sits beside it and never
changes it: a score set by hand with the reason, the review entries read (the interview bar then
follows the score), the bar decided by hand, a comment. ``decided`` reads both into what every batch
export shows: the final score, the final interview verdict, and the decision in one line. A batch
keeps the decisions in ``decisions.json`` (``harness.batch.decisions`` reads and writes it).

A decision names the source it was made for (its SHA-256): when the candidate's source has
changed since, the decision is shown as made for an older version and not applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from harness.report.model import Report

__all__ = ["Decision", "Decided", "decided", "DECISION_FIELDS"]

DECISION_FIELDS = ("decided_at", "by", "source_sha256", "automatic_score", "max_score", "score", "because",
                   "comment", "accept_review", "bar")
"""What one decision records, in the order ``decisions.json`` writes it."""


@dataclass(frozen=True)
class Decision:
    """What a person decided about one candidate, as it stands after every ``grade batch decide``."""

    decided_at: str
    """When (ISO 8601, UTC) it was last changed."""
    by: str
    """Who decided (``--by``; the login name by default)."""
    source_sha256: str
    """The source it was made for."""
    automatic_score: float
    """The grader's score it was made over."""
    max_score: float
    score: float | None = None
    """The score set by hand; None keeps the automatic one."""
    because: str = ""
    """Why the score or the interview bar was set by hand."""
    comment: str = ""
    accept_review: bool = False
    """The integrity review entries were read: the interview bar follows the score."""
    bar: bool | None = None
    """The interview bar decided by hand (passed or not); None lets it follow the grade."""
    history: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)
    """Earlier states of the decision, oldest first (each without its own history)."""

    @property
    def empty(self) -> bool:
        """Nothing decided (a decision cleared): shown as no decision, kept for its history."""
        return self.score is None and self.bar is None and not self.accept_review and not self.comment

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in DECISION_FIELDS}
        out["history"] = [dict(entry) for entry in self.history]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        """From a mapping ``harness.batch.decisions`` has validated."""
        return cls(**{name: data[name] for name in DECISION_FIELDS if name in data},
                   history=tuple(dict(entry) for entry in data.get("history") or ()))

    def state(self) -> dict[str, Any]:
        """The decision without its history: one entry of a later decision's history."""
        return {name: getattr(self, name) for name in DECISION_FIELDS}


@dataclass(frozen=True)
class Decided:
    """A candidate's grade with a person's decision applied: what every export of a batch shows."""

    final_score: float
    automatic_score: float
    interview_passed: bool | None
    """The final verdict; None when the core level was not graded (there is no bar)."""
    needs_review: bool
    decision: Decision | None
    current: bool
    """The decision was made for the source graded (False: for an older version, and not applied)."""

    @property
    def applies(self) -> bool:
        return self.decision is not None and self.current and not self.decision.empty

    @property
    def score_set(self) -> bool:
        return self.applies and self.decision is not None and self.decision.score is not None

    @property
    def bar_set(self) -> bool:
        return self.applies and self.decision is not None and self.decision.bar is not None

    @property
    def comment(self) -> str:
        return self.decision.comment if self.decision is not None else ""

    def describe(self) -> str:
        """The decision in one line ('' when there is none): what a table cell shows."""
        d = self.decision
        if d is None or d.empty:
            return ""
        parts = []
        if d.score is not None:
            parts.append(f"score set to {d.score:.1f} (automatic {d.automatic_score:.1f})")
        if d.bar is not None:
            parts.append(f"interview bar {'passed' if d.bar else 'not passed'} by decision")
        if d.accept_review:
            parts.append("review entries read")
        if d.because:
            parts.append(f"because {d.because}")
        if not parts:
            parts.append("comment")
        text = "; ".join(parts) + f" ({d.by}, {d.decided_at[:10]})"
        if not self.current:
            text = f"made for an older version of the source ({d.source_sha256[:12]}), not applied: {text}"
        return text

    def to_dict(self) -> dict[str, Any] | None:
        """The decision as a summary row carries it: the record, and whether it applies to this source."""
        if self.decision is None:
            return None
        return {**self.decision.state(), "current": self.current, "applied": self.applies,
                "text": self.describe()}


def decided(report: Report, decision: Decision | None) -> Decided:
    """``report``'s final score and interview verdict under ``decision``.

    A decision for another source (an older version) is not applied. Accepting the review entries
    lets the bar follow the score: passed when the core score reaches the bar and no gate failed or
    waits, as the rubric would have said with nothing to review. A bar decided by hand overrides both.
    """
    interview = report.interview
    automatic = round(report.score, 2)
    passed = interview.passed if interview is not None else None
    needs_review = interview.needs_review if interview is not None else False
    current = decision is not None and decision.source_sha256 == report.source_sha256
    final = automatic
    if decision is not None and current:
        if decision.score is not None:
            final = round(decision.score, 2)
        if decision.accept_review and interview is not None:
            needs_review = False
            passed = (report.status == "graded" and interview.core_score >= interview.bar - 1e-9
                      and not interview.gates_failed and not interview.gates_not_attempted)
        if decision.bar is not None:
            passed = decision.bar
    return Decided(final, automatic, passed, needs_review, decision, current)
