"""The interview's agreements: what was agreed away is not required, never failed, and the report says so."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import harness.grade
from harness.agreements import Agreements, NOT_REQUIRED, parse_agreements
from harness.cli import main
from harness.errors import HarnessError
from harness.grade import GradeOptions, grade
from harness.report.model import exit_code
from harness.report.render import render_markdown, render_text
from harness.report.rubric import load_rubric

AGREED = Path(__file__).parent / "solutions" / "agreed_interface.py"
TERMS = "broadcasting=no,upstream=no,second_backward=overwrite"
FAILING = ("failed", "error", "timeout")


def test_terms_are_parsed_in_a_fixed_order():
    agreed = parse_agreements("second_backward=overwrite, broadcasting=no")
    assert agreed.terms == (("broadcasting", "no"), ("second_backward", "overwrite"))
    assert agreed.describe() == "broadcasting=no, second_backward=overwrite"
    assert not parse_agreements("")


@pytest.mark.parametrize("text, message", [
    ("broadcast=no", "--agree: unknown agreement 'broadcast' (known: broadcasting, upstream, second_backward)"),
    ("upstream=maybe", "--agree: upstream is yes or no, got 'maybe'"),
    ("second_backward=add", "--agree: second_backward is accumulate or overwrite, got 'add'"),
    ("upstream", "--agree: 'upstream' is not NAME=VALUE (e.g. broadcasting=no)"),
])
def test_bad_terms_are_named(text, message):
    with pytest.raises(HarnessError) as caught:
        parse_agreements(text)
    assert str(caught.value) == message


def test_a_term_excuses_only_the_checks_of_the_behaviour_agreed_away():
    agreed = parse_agreements("broadcasting=no,upstream=yes")
    assert agreed.excuse({"feature:broadcasting", "relu"}) == f"{NOT_REQUIRED} (broadcasting=no)"
    assert agreed.excuse({"feature:upstream"}) is None  # agreed as the contract has it
    assert Agreements().excuse({"feature:broadcasting"}) is None


def test_the_command_line_overrides_the_rubric_term_by_term(tmp_path):
    rubric = tmp_path / "rubric.yaml"
    # YAML reads a bare no as false: a rubric author may write it either way.
    rubric.write_text("agreements:\n  broadcasting: no\n  upstream: 'no'\n")
    loaded = load_rubric(rubric)
    assert loaded.agreements.terms == (("broadcasting", "no"), ("upstream", "no"))
    merged = parse_agreements("upstream=yes,second_backward=overwrite").over(loaded.agreements)
    assert merged.terms == (("broadcasting", "no"), ("upstream", "yes"), ("second_backward", "overwrite"))
    rubric.write_text("agreements:\n  order: any\n")
    with pytest.raises(HarnessError, match=r"rubric.yaml: agreements: unknown agreement 'order'"):
        load_rubric(rubric)


def test_excused_checks_get_no_points_and_the_others_share_the_level():
    rubric = load_rubric()
    checks = [("followups.a", "followups"), ("followups.b", "followups"), ("core.c", "core")]
    points = rubric.allot(checks, excused={"followups.b"})
    assert points["followups.b"] == 0.0
    assert points["followups.a"] == rubric.levels["followups"]


@pytest.fixture(scope="module")
def graded(launcher):
    """The same engine graded under the agreements and under the contract."""
    return {agreed: grade(AGREED, GradeOptions(max_examples=50, agreements=parse_agreements(agreed)), launcher)
            for agreed in (TERMS, "")}


def test_under_the_agreements_every_required_check_passes_and_the_bar_too(graded):
    report = graded[TERMS]
    assert report.status == "graded" and exit_code(report) == 0
    assert not [c.id for c in report.checks if c.outcome in FAILING]
    assert report.interview.passed
    excused = {c.id: c.message for c in report.checks if c.outcome == "skipped"}
    assert excused["followups.passes"] == f"{NOT_REQUIRED} (second_backward=overwrite)"
    assert excused["followups.broadcasting"] == excused["followups.properties"] == f"{NOT_REQUIRED} (broadcasting=no)"
    assert excused["followups.upstream"] == f"{NOT_REQUIRED} (upstream=no)"
    assert all(report_check.max_points == 0 for report_check in report.checks if report_check.id in excused)
    # What was agreed away is not the candidate's loss: the follow-up points go to what was required.
    required = [c for c in report.checks if c.level == "followups" and c.id not in excused]
    assert sum(c.max_points for c in required) == pytest.approx(report.levels["followups"]["max_score"])


def test_without_the_agreements_the_relevant_checks_fail_or_are_not_attempted(graded):
    report = graded[""]
    outcomes = {c.id: c.outcome for c in report.checks}
    assert exit_code(report) == 1
    assert outcomes["followups.passes"] == "failed"
    assert outcomes["followups.broadcasting"] == outcomes["followups.upstream"] == "not_attempted"
    assert {c.id for c in report.checks if c.outcome in FAILING} == {
        "followups.passes", "spec:followups.passes.worked_example", "spec:followups.passes.scalar_reuse",
        "spec:followups.passes.constants_stay_none", "spec:followups.passes.diamond"}
    assert report.score < graded[TERMS].score
    assert report.agreements == {}


def test_the_agreements_are_in_the_header_and_the_json(graded):
    report = graded[TERMS]
    data = report.to_dict()
    assert data["agreements"] == {"broadcasting": "no", "upstream": "no", "second_backward": "overwrite"}
    header = render_text(report).split("\n\n")[0].splitlines()  # under the first line, wrapped to the page
    assert header[-1] == "  agreed interface: broadcasting=no, upstream=no, second_backward=overwrite"
    assert "Agreed interface: broadcasting=no, upstream=no, second_backward=overwrite" in render_markdown(report)
    assert "agreed interface" not in render_text(graded[""])


def test_agree_reaches_the_grader_from_the_command_line(monkeypatch, tmp_path):
    seen = {}

    def fake(submission, options, sandbox):
        seen["options"] = options
        return graded_stub()

    monkeypatch.setattr(harness.grade, "grade_submission", fake)
    path = tmp_path / "s.py"
    path.write_text("class Tensor: pass\n")
    result = CliRunner().invoke(main, [str(path), "--agree", TERMS, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert seen["options"].agreements == parse_agreements(TERMS)
    bad = CliRunner().invoke(main, [str(path), "--agree", "upstream=maybe"])
    assert bad.exit_code == 2 and "Invalid value for '--agree': upstream is yes or no, got 'maybe'" in bad.output


def test_batch_takes_the_same_option():
    from harness.cli.batch import _options, batch

    assert "agree" in {p.name for p in batch.params}
    values = dict(level="all", seed=0, class_name="Tensor", specs=(), only_specs=(), rubric=None, max_examples=5,
                  time_limit=60.0, memory_mb=512, agree=parse_agreements(TERMS), variant="tensor")
    assert _options(values, "sandbox").agreements == parse_agreements(TERMS)


def graded_stub():
    from harness.report.model import Report

    return Report(file="s.py", status="graded", score=0.0, max_score=0.0, levels={}, checks=())
