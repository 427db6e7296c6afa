"""The candidate's feedback: the Markdown write-up of what a candidate may see (``candidate_view``), and the
final score when a person set it. A batch writes it to ``feedback/<id>.md``; ``grade FILE --format feedback``
prints it."""

from __future__ import annotations

from harness.report.candidate_view import candidate_view
from harness.report.decisions import Decided
from harness.report.model import Report
from harness.report.render import render_markdown

__all__ = ["render_feedback"]


def render_feedback(report: Report, decided: Decided | None = None) -> str:
    """The write-up without hidden cases; a score set by the interviewer is stated under the title (its reason
    and any comment stay with the interviewer)."""
    lines = render_markdown(candidate_view(report)).split("\n")
    if decided is not None and decided.score_set:
        note = (f"**Final score: {decided.final_score:.1f} of {round(report.max_score, 2):.1f}**, set by the "
                f"interviewer (the checks below give {decided.automatic_score:.1f}).")
        lines[1:1] = ["", note]
    return "\n".join(lines)
