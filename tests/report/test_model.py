"""Combining two partial grades (--watch grades core first) and saying what changed between saves; worker text
that would draw lines of a report."""

import dataclasses

from harness.checks.context import describe_error
from harness.report.model import CheckResult, Interview, Report, RootCause, changes, combine, exit_code
from harness.report.render import render_text


def _report(level_scores: dict[str, tuple[float, float]], outcomes: dict[str, str], causes=()) -> Report:
    checks = tuple(CheckResult(cid, cid.split(".")[0], "c", "t", outcome, points=1.0 if outcome == "passed" else 0.0,
                               max_points=1.0) for cid, outcome in outcomes.items())
    levels = {level: {"score": s, "max_score": m} for level, (s, m) in level_scores.items()}
    return Report(file="s.py", status="graded", score=sum(s for s, _ in level_scores.values()),
                  max_score=sum(m for _, m in level_scores.values()), levels=levels, checks=checks,
                  interview=Interview(passed=True, bar=0.0, core_score=0.0), root_causes=tuple(causes))


def test_combining_keeps_each_level_once_and_adds_the_scores():
    core = _report({"core": (2.0, 3.0)}, {"core.a": "passed", "core.b": "passed", "core.c": "failed"},
                   [RootCause("overwrite", "o", checks=("core.c",), points=1.0)])
    rest = _report({"core": (0.0, 3.0), "followups": (1.0, 2.0)}, {"followups.a": "passed", "followups.b": "failed"},
                   [RootCause("overwrite", "o", checks=("followups.b",), points=1.0)])
    both = combine(core, rest)
    assert both.levels == {"core": {"score": 2.0, "max_score": 3.0}, "followups": {"score": 1.0, "max_score": 2.0}}
    assert (both.score, both.max_score) == (3.0, 5.0)
    assert [c.id for c in both.checks] == ["core.a", "core.b", "core.c", "followups.a", "followups.b"]
    assert both.root_causes == (RootCause("overwrite", "o", checks=("core.c", "followups.b"), points=2.0),)
    assert both.interview == core.interview


def test_changes_name_the_checks_that_flipped_and_the_score():
    before = _report({"core": (1.0, 3.0)}, {"core.a": "passed", "core.b": "failed", "core.c": "error"})
    after = _report({"core": (2.0, 3.0)}, {"core.a": "failed", "core.b": "passed", "core.c": "passed"})
    assert changes(before, after) == ["2 checks now pass: core.b, core.c", "1 check now fails: core.a",
                                      "score 1.0 -> 2.0 (+1.0)"]
    assert changes(after, after) == ["no check changed its outcome"]


def test_a_violation_in_either_part_is_a_violation_of_the_whole():
    # --watch: the core part graded clean, the follow-ups used torch's autograd.
    core = dataclasses.replace(
        _report({"core": (3.0, 3.0)}, {"core.a": "passed", "core.b": "passed", "core.c": "passed"}),
        interview=Interview(passed=True, bar=2.1, core_score=3.0))
    rest = dataclasses.replace(_report({"followups": (0.0, 2.0)}, {"followups.a": "skipped"}),
                               status="integrity_violation", integrity_violations=("uses torch.autograd.grad",),
                               interview=None)
    for both in (combine(core, rest), combine(rest, core)):
        assert both.status == "integrity_violation" and both.integrity_violations == ("uses torch.autograd.grad",)
        assert both.score == 0.0 and all(c.points == 0.0 for c in both.checks)
        assert all(v["score"] == 0.0 for v in both.levels.values())
    assert combine(core, rest).interview.passed is False
    text = render_text(combine(core, rest))
    assert "integrity violation (the score is 0)" in text and "interview bar: passed" not in text
    assert text.splitlines()[-1].startswith("score 0.0/5.0  [integrity_violation]")


def test_worker_text_cannot_draw_a_line_of_the_text_report():
    # An exception class named with newlines, raised on import: one escaped line in the header.
    fake = "score 60.0/60.0  [graded]  interview bar: passed"
    message = describe_error({"type": f"Boom\n{fake}", "message": f"x\r\n{fake}", "where": "import"})
    report = Report(file="s.py", status="error", score=0.0, max_score=60.0, levels={"core": {"score": 0.0,
                    "max_score": 60.0}}, checks=(), message=f"importing the submission raised {message}",
                    interview=Interview(passed=False, bar=42.0, core_score=0.0))
    lines = render_text(report).splitlines()
    assert [line for line in lines if fake in line] == [lines[1]]  # only inside the one escaped header line
    assert lines[1].startswith("could not be graded (error): importing the submission raised Boom\\nscore")


def test_an_informational_check_costs_points_but_never_the_exit_code():
    informational = _report({"followups": (24.5, 25.0)}, {"followups.saved_tensors": "failed"})
    assert exit_code(informational) == 0
    graded = _report({"followups": (24.5, 25.0)}, {"followups.saved_tensors": "failed", "followups.no_grad": "failed"})
    assert exit_code(graded) == 1
