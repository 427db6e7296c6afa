"""Gradescope's results.json from JSON reports: points and plain text, hidden spec cases kept from the student,
a person's decision in the score."""

import dataclasses
import json

from made_up_cohort import check, cohort, report

from harness.report.candidate_view import candidate_view
from harness.report.decisions import Decision, decided
from harness.report.gradescope import gradescope_results
from harness.report.model import RootCause


def test_gradescope_results_carry_points_and_plain_text():
    reports = cohort()
    results = gradescope_results(reports["bert"])
    assert (results["score"], results["max_score"], results["output_format"]) == (4, 10, "text")
    assert [(t["status"], t["score"], t["max_score"]) for t in results["tests"]] == [("failed", 0, 6),
                                                                                      ("passed", 4, 4)]
    assert "reproduce:" in results["tests"][0]["output"] and results["tests"][0]["output_format"] == "text"
    json.dumps(results)
    evil = gradescope_results(reports["=evil"])
    assert evil["tests"] == [] and evil["score"] == 0 and "importing raised" in evil["output"]


SECRET = "secret_graph = Tensor(torch.tensor([[7.0, 7.0]]))"


def _with_hidden_cases():
    """A report whose root cause explains a visible check and a hidden case, and whose snippet is the hidden one's,
    and a second cause that explains a hidden case only."""
    made = report("s.py", "graded", (
        check("core.accumulation", "accumulation", "failed", 0, 6, "a.grad differs", snippet="visible = 1"),
        check("spec:core.secret", "accumulation", "failed", 0, 2, "the secret case failed", snippet=SECRET),
        check("spec:core.other_secret", "order", "failed", 0, 2, "another secret"),
        check("core.order", "order", "passed", 2, 2)),
        root_causes=[RootCause("overwrite", "overwrite", checks=("core.accumulation", "spec:core.secret"),
                               snippet=SECRET),
                     RootCause(None, "wrong gradients around x0 + x1", checks=("spec:core.other_secret",))])
    hidden = {"spec:core.secret", "spec:core.other_secret"}
    return dataclasses.replace(made, checks=tuple(dataclasses.replace(c, hidden=c.id in hidden) for c in made.checks))


def test_hidden_cases_count_but_the_student_never_sees_them():
    made = _with_hidden_cases()
    results = gradescope_results(made, visibility=(("*", "visible"),))
    by_name = {t["name"].split(": ")[0]: t for t in results["tests"]}
    assert by_name["spec:core.secret"]["visibility"] == "hidden"  # whatever the rules say
    assert by_name["core.accumulation"]["visibility"] == "visible"
    assert results["score"] == made.score  # counted
    assert "secret" not in results["output"] and SECRET not in results["output"]
    assert "visible = 1" in results["output"]  # the cause's snippet is now the visible check's


def test_the_candidate_view_leaves_out_what_shows_a_hidden_case():
    made = _with_hidden_cases()
    view = candidate_view(made)
    assert [c.id for c in view.checks] == ["core.accumulation", "core.order"]
    assert [(c.bug, c.checks, c.snippet) for c in view.root_causes] == [("overwrite", ("core.accumulation",),
                                                                         "visible = 1")]
    assert (view.score, view.levels, view.interview) == (made.score, made.levels, made.interview)
    plain = cohort()["bert"]
    assert candidate_view(plain) is plain  # nothing hidden: the same report


def test_a_score_set_by_a_person_is_the_students_score_without_the_reason():
    bert = cohort()["bert"]
    decision = Decision(decided_at="2025-05-01T10:00:00+00:00", by="ann", source_sha256=bert.source_sha256,
                        automatic_score=4.0, max_score=10.0, score=7.5, because="explained the fix aloud",
                        comment="knew accumulation once asked")
    results = gradescope_results(bert, decided=decided(bert, decision))
    assert results["score"] == 7.5
    assert results["output"].splitlines()[0] == "graded: score 7.5 of 10.0, set by the interviewer (the checks gave 4.0)"
    assert "explained the fix aloud" not in results["output"] and "knew accumulation" not in results["output"]
    older = dataclasses.replace(decision, source_sha256="cd" * 32)
    assert gradescope_results(bert, decided=decided(bert, older))["score"] == 4.0  # made for another source
