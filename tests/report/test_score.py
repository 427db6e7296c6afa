"""Scoring one grade: the rubric's points allotted once, earned only by passing checks of a graded submission."""

import pytest

from harness.agreements import NOT_REQUIRED
from harness.report.model import CheckResult
from harness.report.rubric import Rubric
from harness.grade import excused
from harness.report.score import allot, score

# core: 30 points, a and b weigh 2 and 1; followups: 10 points shared evenly.
RUBRIC = Rubric(levels={"core": 30.0, "followups": 10.0, "extensions": 0.0}, weights=[("core.a", 2.0)],
                interview_bar=0.5)


def _results(*outcomes: tuple[str, str, str, str]) -> list[CheckResult]:
    # A check skipped as not required is excused by its kind (a field), whatever its message says.
    return [CheckResult(cid, level, "order", "t", outcome, message,
                        kind="excused" if message.startswith(NOT_REQUIRED) else "verdict")
            for cid, level, outcome, message in outcomes]


def test_points_are_shared_by_weight_and_excused_checks_share_nothing():
    results = _results(("core.a", "core", "passed", ""), ("core.b", "core", "failed", "x"),
                       ("followups.c", "followups", "passed", ""),
                       ("followups.d", "followups", "skipped", f"{NOT_REQUIRED}: broadcasting=no"))
    assert excused(results) == {"followups.d"}
    assert allot(RUBRIC, results, excused(results)) == {"core.a": 20.0, "core.b": 10.0, "followups.c": 10.0,
                                                        "followups.d": 0.0}


def test_a_passing_check_earns_its_points_and_a_failing_one_its_maximum_only():
    results = _results(("core.a", "core", "passed", ""), ("core.b", "core", "failed", "x"),
                       ("followups.c", "followups", "passed", ""))
    scores = score(results, allot(RUBRIC, results, excused(results)), RUBRIC, ("core", "followups"),
                   excused=set(), graded=True, needs_review=False)
    assert [(c.id, c.points, c.max_points) for c in scores.checks] == [
        ("core.a", 20.0, 20.0), ("core.b", 0.0, 10.0), ("followups.c", 10.0, 10.0)]
    assert scores.levels == {"core": {"score": 20.0, "max_score": 30.0},
                             "followups": {"score": 10.0, "max_score": 10.0}}
    assert (scores.total, scores.max_score) == (30.0, 40.0)
    assert scores.interview.passed is True and scores.interview.bar == 15.0


@pytest.mark.parametrize("graded, needs_review", [(False, False), (True, True)])
def test_nothing_is_earned_unless_graded_and_a_review_holds_the_bar(graded, needs_review):
    results = _results(("core.a", "core", "passed", ""), ("core.b", "core", "passed", ""))
    scores = score(results, allot(RUBRIC, results, excused(results)), RUBRIC, ("core",),
                   excused=set(), graded=graded, needs_review=needs_review)
    assert scores.total == (30.0 if graded else 0.0)
    assert scores.max_score == 30.0
    assert scores.interview.passed is False


def test_a_grade_without_the_core_level_has_no_interview_verdict():
    results = _results(("followups.c", "followups", "passed", ""))
    scores = score(results, allot(RUBRIC, results, excused(results)), RUBRIC, ("followups",),
                   excused=set(), graded=True, needs_review=False)
    assert scores.interview is None and scores.total == 10.0
