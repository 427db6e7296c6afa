"""The summary of a batch from JSON reports: rows follow the reports, decisions apply to every row alike, and
the concept ranking reads attempted checks only, core first."""

import dataclasses

from made_up_cohort import check, cohort, report

from harness.report.decisions import Decision
from harness.report.model import RootCause
from harness.report.summary import TITLE_CHARS, cause_title, concept_rates, summarise


def _summary(decisions=None):
    reports = cohort()
    return summarise(reports, settings={"level": "core"}, similarity=[{"a": "ada", "b": "cleo", "score": 1.0,
                                                                       "shared": 9}], decisions=decisions), reports


def test_rows_follow_the_reports():
    summary, _ = _summary()
    rows = {r["id"]: r for r in summary["submissions"]}
    assert list(rows) == ["ada", "bert", "cleo", "dmitri", "=evil"]
    assert (rows["ada"]["score"], rows["ada"]["interview_passed"], rows["ada"]["concepts"]) == (
        10, True, {"accumulation": 6, "order": 4})
    assert (rows["bert"]["score"], rows["bert"]["checks_failed"], rows["bert"]["root_causes"]) == (
        4, 1, ["overwrite", "order failures around x0 + x1"])
    assert (rows["cleo"]["review_flags"], rows["cleo"]["needs_review"], rows["cleo"]["interview_passed"]) == (
        1, True, False)
    assert rows["dmitri"]["violations"] == 1
    assert summary["counts"] == {"graded": 3, "error": 1, "timeout": 0, "integrity_violation": 1, "total": 5,
                                 "interview_passed": 1, "needs_review": 1, "pending": 0, "decided": 0,
                                 "decisions_outdated": 0}
    assert all(r["final_score"] == r["automatic_score"] == r["score"] and r["decision"] is None for r in rows.values())
    assert summary["maximum"] == {"score": 10, "levels": {"core": 10}, "concepts": {"accumulation": 6, "order": 4}}


def test_concept_rates_count_attempted_checks_of_graded_candidates_only():
    summary, _ = _summary()
    # graded: ada, bert, cleo; bert fails accumulation; dmitri (violation) and =evil are not counted
    assert summary["concepts"]["accumulation"] == {"level": "core", "candidates": 3, "attempted": 3, "all_passed": 2,
                                                   "checks": 3, "checks_passed": 2, "pass_rate": 0.667,
                                                   "check_pass_rate": 0.667}
    assert summary["concepts"]["order"]["pass_rate"] == 1.0
    assert list(summary["concepts"]) == ["accumulation", "order"]  # most missed first


def test_concepts_nobody_attempted_have_no_rate_and_core_comes_first():
    def graded(*checks):
        return report("s.py", "graded", checks)

    reports = [
        graded(check("core.order", "order", "failed", 0, 4), check("extensions.exp", "ops", "not_attempted", 0, 1),
               check("followups.broadcast", "broadcasting", "passed", 1, 1)),
        graded(check("core.order", "order", "passed", 4, 4), check("extensions.exp", "ops", "not_attempted", 0, 1),
               check("followups.broadcast", "broadcasting", "not_attempted", 0, 1),
               check("followups.broadcast_col", "broadcasting", "failed", 0, 1)),
    ]
    rates = concept_rates(reports)
    # the extension nobody attempted no longer ranks as the most missed: it has no rate, and comes last
    assert list(rates) == ["order", "broadcasting", "ops"]
    assert rates["ops"]["pass_rate"] is None and rates["ops"]["attempted"] == 0
    assert (rates["order"]["pass_rate"], rates["order"]["level"]) == (0.5, "core")
    # the first candidate passed the one broadcasting check it attempted; the second failed its one
    assert (rates["broadcasting"]["attempted"], rates["broadcasting"]["all_passed"]) == (2, 1)
    assert rates["broadcasting"]["checks"] == 2  # the check not attempted is left out


def _decision(r, **fields) -> Decision:
    return Decision(decided_at="2025-05-01T10:00:00+00:00", by="ann", source_sha256=r.source_sha256,
                    automatic_score=r.score, max_score=r.max_score, **fields)


def test_a_decision_sets_the_final_score_and_an_accepted_review_lets_the_bar_follow_it():
    reports = cohort()
    decisions = {"bert": _decision(reports["bert"], score=7.5, because="explained the fix aloud", comment="good"),
                 "cleo": _decision(reports["cleo"], accept_review=True)}
    summary = summarise(reports, settings={}, decisions=decisions)
    rows = {r["id"]: r for r in summary["submissions"]}
    bert, cleo = rows["bert"], rows["cleo"]
    assert (bert["score"], bert["automatic_score"], bert["final_score"], bert["comment"]) == (4, 4, 7.5, "good")
    assert bert["decision"]["applied"] and bert["decision"]["current"] and bert["decision"]["by"] == "ann"
    assert bert["interview_passed"] is False  # a score set by hand does not decide the bar
    assert (cleo["interview_passed"], cleo["needs_review"]) == (True, False)
    assert summary["counts"]["interview_passed"] == 2 and summary["counts"]["needs_review"] == 0
    assert summary["counts"]["decided"] == 2


def test_a_decision_for_an_older_source_is_shown_and_not_applied():
    reports = cohort()
    older = dataclasses.replace(_decision(reports["bert"], score=9.0, because="b", comment="old note"),
                                source_sha256="cd" * 32)
    row = summarise(reports, settings={}, decisions={"bert": older})["submissions"][1]
    assert (row["final_score"], row["decision"]["current"], row["decision"]["applied"]) == (4, False, False)
    assert row["decision"]["text"].startswith("made for an older version of the source (cdcdcdcdcdcd), not applied")
    assert row["comment"] == "old note"


def test_a_bar_decided_by_hand_overrides_the_grade():
    reports = cohort()
    row = summarise(reports, settings={}, decisions={"bert": _decision(reports["bert"], bar=True, because="panel")}
                    )["submissions"][1]
    assert (row["interview_passed"], row["final_score"]) == (True, 4)


def test_root_causes_have_short_titles():
    assert cause_title(RootCause("overwrite", "gradient overwritten instead of accumulated")) == \
        "gradient overwritten instead of accumulated"
    sentence = RootCause(None, "Every leaf's gradient is zero: the gradients backward computes never reach the leaves")
    assert cause_title(sentence) == "Every leaf's gradient is zero"
    long = cause_title(RootCause(None, "wrong gradients around " + "x0 + " * 30 + "x1"))
    assert len(long) <= TITLE_CHARS and long.endswith("\u2026")
    assert cause_title(RootCause(None, "`a - b`: the gradient of `b` has the wrong sign")) == \
        "`a - b`: the gradient of `b` has the wrong sign"
