"""Scoring one grade: the rubric's points allotted once, earned by the checks that passed, and the interview verdict.

A pure function of the results: the same checks and outcomes always score the same.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import AbstractSet, Mapping, Sequence

from harness.report.model import CheckResult, Interview
from harness.report.rubric import Rubric

__all__ = ["Scores", "allot", "score"]


def allot(rubric: Rubric, results: Sequence[CheckResult], excused: AbstractSet[str]) -> dict[str, float]:
    """Each check's points in ``rubric`` (check id -> points), nothing for the ``excused``: the one allotment of a grade."""
    return rubric.allot([(r.id, r.level) for r in results], excused)


@dataclass(frozen=True)
class Scores:
    checks: tuple[CheckResult, ...]
    """The results with the points each earned out of the points it could earn."""
    levels: dict[str, dict[str, float]]
    """Per level graded: its ``score`` and ``max_score``."""
    interview: Interview | None
    """None when the core level was not graded."""

    @property
    def total(self) -> float:
        return sum(v["score"] for v in self.levels.values())

    @property
    def max_score(self) -> float:
        return sum(v["max_score"] for v in self.levels.values())


def score(results: Sequence[CheckResult], points: Mapping[str, float], rubric: Rubric, levels: Sequence[str], *,
          excused: AbstractSet[str], graded: bool, needs_review: bool) -> Scores:
    """The scores of ``results`` over ``levels``, with ``points`` from ``allot``; nothing is earned unless ``graded``."""
    scored = tuple(dataclasses.replace(r, points=points[r.id] if r.outcome == "passed" and graded else 0.0,
                                       max_points=points[r.id]) for r in results)
    by_level = {
        level: {"score": sum(r.points for r in scored if r.level == level), "max_score": rubric.levels.get(level, 0.0)}
        for level in levels
    }
    interview = rubric.interview(by_level.get("core"), scored, graded=graded, needs_review=needs_review,
                                 excused=set(excused))
    return Scores(scored, by_level, interview)
