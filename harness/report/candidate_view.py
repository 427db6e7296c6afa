"""What a candidate may see of their report: everything but the checks of hidden spec cases.

A hidden case (``hidden: true`` in its spec) is graded and counted like any other: the scores, the
levels and the interview verdict stay as they are. What goes is anything that would show the case
itself: its check, its id in a root cause's list, and a root cause's snippet taken from it (the
smallest failing graph: the hidden case's inputs). A root cause that explains hidden checks only goes
too. Gradescope's results and the candidate's Markdown feedback are drawn from this view.
"""

from __future__ import annotations

import dataclasses

from harness.report.model import Report

__all__ = ["candidate_view", "hidden_ids"]


def hidden_ids(report: Report) -> set[str]:
    return {c.id for c in report.checks if c.hidden}


def candidate_view(report: Report) -> Report:
    """``report`` without what shows a hidden case (the same report when it has none)."""
    hidden = hidden_ids(report)
    if not hidden:
        return report
    checks = tuple(c for c in report.checks if c.id not in hidden)
    snippets = {str(c.details.get("snippet")) for c in report.checks if c.id in hidden and c.details.get("snippet")}
    visible = {c.id: c for c in checks}
    causes = []
    for cause in report.root_causes:
        kept = tuple(cid for cid in cause.checks if cid not in hidden)
        waiting = tuple(cid for cid in cause.waiting if cid not in hidden)
        if cause.checks and not kept and not waiting:
            continue  # it explains hidden cases only: the candidate has nothing of it to read
        snippet = cause.snippet
        if snippet and snippet in snippets:
            # the smallest visible graph it explains instead (the shortest snippet stands for the smallest)
            shown = [str(visible[cid].details["snippet"]) for cid in kept
                     if cid in visible and visible[cid].details.get("snippet")]
            snippet = min(shown, key=len) if shown else ""
        causes.append(dataclasses.replace(cause, checks=kept, waiting=waiting, snippet=snippet))
    return dataclasses.replace(report, checks=checks, root_causes=tuple(causes))
