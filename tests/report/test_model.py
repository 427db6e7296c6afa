"""Saying what changed between saves (--watch); worker text that would draw lines of a report; the JSON report
read back into the model."""

import dataclasses
import json

import pytest
from hypothesis import given, strategies as st

from harness.checks.context import describe_error
from harness.report.model import (MISSING_MEMBER, OUTCOMES, STATUSES, CheckResult, Interview, Report, ReviewEntry,
                                  RootCause, changes, exit_code)
from harness.report.render import render_text


def _report(level_scores: dict[str, tuple[float, float]], outcomes: dict[str, str], causes=()) -> Report:
    checks = tuple(CheckResult(cid, cid.split(".")[0], "c", "t", outcome, points=1.0 if outcome == "passed" else 0.0,
                               max_points=1.0) for cid, outcome in outcomes.items())
    levels = {level: {"score": s, "max_score": m} for level, (s, m) in level_scores.items()}
    return Report(file="s.py", status="graded", score=sum(s for s, _ in level_scores.values()),
                  max_score=sum(m for _, m in level_scores.values()), levels=levels, checks=checks,
                  interview=Interview(passed=True, bar=0.0, core_score=0.0), root_causes=tuple(causes))


def test_changes_name_the_checks_that_flipped_and_the_score():
    before = _report({"core": (1.0, 3.0)}, {"core.a": "passed", "core.b": "failed", "core.c": "error"})
    after = _report({"core": (2.0, 3.0)}, {"core.a": "failed", "core.b": "passed", "core.c": "passed"})
    assert changes(before, after) == ["2 checks now pass: core.b, core.c", "1 check now fails: core.a",
                                      "score 1.0 -> 2.0 (+1.0)"]
    assert changes(after, after) == ["no check changed its outcome"]


def test_the_core_levels_early_report_is_compared_with_the_core_of_the_last_one():
    before = _report({"core": (1.0, 3.0), "followups": (2.0, 2.0)},
                     {"core.a": "passed", "core.b": "failed", "followups.a": "passed"})
    core = _report({"core": (2.0, 3.0)}, {"core.a": "passed", "core.b": "passed"})
    # Not "score 3.0 -> 2.0": the follow-ups are not graded yet, so only the core level is compared.
    assert changes(before, core) == ["1 check now passes: core.b", "core 1.0 -> 2.0 (+1.0)"]


def test_worker_text_cannot_draw_a_line_of_the_text_report():
    # An exception class named with newlines, raised on import: one escaped line in the header.
    fake = "score 60.0/60.0  [graded]  interview bar: passed"
    message = describe_error({"type": f"Boom\n{fake}", "message": f"x\r\n{fake}", "where": "import"})
    report = Report(file="s.py", status="error", score=0.0, max_score=60.0, levels={"core": {"score": 0.0,
                    "max_score": 60.0}}, checks=(), message=f"importing the submission raised {message}",
                    interview=Interview(passed=False, bar=42.0, core_score=0.0))
    lines = render_text(report).splitlines()
    assert lines[1].startswith("could not be graded (error): importing the submission raised Boom\\nscore")
    # Wrapped to the page, the submission's text goes on in lines marked as its own, never as one of ours.
    theirs = [line for line in lines[2:] if "interview bar: passed" in line or "[graded]" in line]
    assert theirs and all(line.startswith("  | ") for line in theirs)
    assert lines[-1].startswith("score 0.0/60.0  [error]")


def test_an_informational_check_costs_points_but_never_the_exit_code():
    informational = _report({"followups": (24.5, 25.0)}, {"followups.saved_tensors": "failed"})
    assert exit_code(informational) == 0
    graded = _report({"followups": (24.5, 25.0)}, {"followups.saved_tensors": "failed", "followups.no_grad": "failed"})
    assert exit_code(graded) == 1


# ---- the JSON report read back ---------------------------------------------------------------------

ODD = "=cmd|' /C calc'!A0 \x1b[2J\r\n\u202e\ud800 ünï 𝔘"
"""Text a submission may put in a report: a formula, escapes, a bidirectional override, a lone surrogate."""

CAUSES = (
    # a catalogued bug with the checks it explains (its level follows its points in the JSON)
    RootCause("overwrite", "overwrite instead of accumulate", "accumulation", ODD, "use +=", ("core.a", "core.b"),
              "x = 1\n", points=12.35, level="core"),
    # a catalogued bug behind an integrity finding only: no checks, no level
    RootCause("grad_has_history", "grads keep their graph", "order", "e", "h", points=0.0),
    # a core method the class lacks: the checks wait for it
    RootCause(None, "implement `sum`: 2 core checks wait for it", "missing", "e", "h", (), "",
              symptom=MISSING_MEMBER, waiting=("core.c", "core.d"), points=0.0, points_waiting=7.5),
    # a wrong rule named by op, operand and symptom (its level comes before its points)
    RootCause(None, "`a * b`: the gradient of `a` is wrong", "ops", ODD, "", ("core.e",), ODD, op="mul",
              operand="a", symptom="wrong_rule", points=3, level="core"),
    # a group around an op, placed at no level
    RootCause(None, "ops failures around x0 @ x1", "ops", "e", "", ("extensions.f",), op="matmul", points=0.25),
)

ODD_REPORT = Report(
    file=f"subs/{ODD}.py", status="integrity_violation", score=0, max_score=60.0,
    levels={"core": {"score": 0, "max_score": 60.0}, "followups": {"score": 0.0, "max_score": 25.5}},
    checks=(CheckResult("core.a", "core", "accumulation", ODD, "failed", ODD, 0.0, 1.5,
                        {"worst": {"index": [0, 1], "got": float("inf"), "expected": -0.0}, "snippet": ODD,
                         "nested": [[], {}, None, True, 10 ** 20, 1e-300]}, 0.125, ("overwrite", "aliased")),
            CheckResult("followups.saved_tensors", "followups", "saved_tensors", "t", "passed", "", 1, 1,
                        {"saved_tensors": {"rows": [], "in_place": "detected"}})),
    integrity_violations=(f"line 3: {ODD}",), message=ODD, seed=2 ** 40,
    interview=Interview(passed=False, bar=48.0, core_score=0.0, needs_review=True, gates_failed=("core.a",),
                        gates_not_attempted=("core.b",)),
    output={"stdout": ODD, "stderr": ""}, timings={"total": 1.5, "wall": 2.125}, grader_version="0.1.0",
    integrity_review=(ReviewEntry(None, ODD, "why"), ReviewEntry(7, "getattr(torch, name)", ODD)),
    root_causes=CAUSES, isolation="basic", isolation_note=ODD, source_sha256="ab" * 32, diagnosis_error=ODD,
    source_note=ODD, variant="function", agreements={"broadcasting": "no"},
)


def _json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2)


@pytest.mark.parametrize("report", [
    ODD_REPORT,
    # a submission that could not be handed to the grader: no checks, no interview (core not graded)
    Report(file="subs/x.zip:a/b.py", status="error", score=0.0, max_score=0.0, levels={}, checks=(),
           message="not a Python file", interview=None),
    dataclasses.replace(ODD_REPORT, status="timeout", root_causes=(), integrity_review=(), agreements={}),
], ids=["odd values", "not graded", "timeout"])
def test_a_report_reads_back_from_its_json(report):
    text = _json(report)
    again = Report.from_dict(json.loads(text))
    assert _json(again) == text
    # the typed values themselves come back (these numbers are already rounded as the JSON rounds them)
    assert (again.interview, again.root_causes, again.integrity_review) == (
        report.interview, report.root_causes, report.integrity_review)
    assert [c.details for c in again.checks] == json.loads(json.dumps([c.details for c in report.checks]))
    assert again.saved_tensors() == report.saved_tensors()


def test_each_kind_of_root_cause_keeps_its_keys_in_the_order_the_diagnosis_writes():
    assert [list(cause.to_dict()) for cause in CAUSES] == [
        ["bug", "name", "concept", "explanation", "hint", "checks", "snippet", "op", "operand", "symptom",
         "points", "level", "confidence", "probes"],
        ["bug", "name", "concept", "explanation", "hint", "checks", "snippet", "op", "operand", "symptom",
         "points", "confidence", "probes"],
        ["bug", "name", "concept", "explanation", "hint", "checks", "waiting", "snippet", "op", "operand",
         "symptom", "points", "points_waiting"],
        ["bug", "name", "concept", "explanation", "hint", "checks", "snippet", "op", "operand", "symptom",
         "level", "points", "confidence", "probes"],
        ["bug", "name", "concept", "explanation", "hint", "checks", "snippet", "op", "operand", "symptom",
         "level", "points", "confidence", "probes"],
    ]


def test_what_a_check_kept_at_run_time_is_never_in_the_json():
    kept = dataclasses.replace(ODD_REPORT.checks[0], evidence=object())
    assert "evidence" not in kept.to_dict()
    assert CheckResult.from_dict(kept.to_dict()).evidence is None
    assert CheckResult.from_dict(kept.to_dict()) == kept  # evidence takes no part in equality


_texts = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_numbers = st.one_of(st.integers(-10 ** 6, 10 ** 6), st.floats(allow_nan=True, allow_infinity=True))
_json_values = st.recursive(st.one_of(st.none(), st.booleans(), _numbers, _texts),
                            lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(_texts, inner, max_size=3)), max_leaves=8)
_ids = st.lists(_texts, max_size=3).map(tuple)


@st.composite
def root_causes(draw: st.DrawFn) -> RootCause:
    """A cause of any kind, with any text and numbers; shrinks towards a catalogued bug with empty fields."""
    kind = draw(st.sampled_from(["bug", "missing", "rule"]))
    return RootCause(
        bug=draw(_texts) if kind == "bug" else None, name=draw(_texts), concept=draw(st.none() | _texts),
        explanation=draw(_texts), hint=draw(_texts), checks=draw(_ids), snippet=draw(_texts),
        op=draw(st.none() | _texts), operand=draw(st.none() | _texts),
        symptom=MISSING_MEMBER if kind == "missing" else draw(st.none() | _texts.filter(lambda s: s != MISSING_MEMBER)),
        points=draw(_numbers), level=draw(st.none() | _texts), waiting=draw(_ids) if kind == "missing" else (),
        points_waiting=draw(_numbers) if kind == "missing" else 0.0)


@st.composite
def reports(draw: st.DrawFn) -> Report:
    """A report with odd values everywhere the JSON has a value."""
    checks = tuple(CheckResult(draw(_texts), draw(_texts), draw(_texts), draw(_texts), draw(st.sampled_from(OUTCOMES)),
                               draw(_texts), draw(_numbers), draw(_numbers),
                               draw(st.dictionaries(_texts, _json_values, max_size=3)), draw(_numbers), draw(_ids))
                   for _ in range(draw(st.integers(0, 2))))
    interview = draw(st.none() | st.builds(Interview, st.booleans(), _numbers, _numbers, st.booleans(), _ids, _ids))
    return Report(
        file=draw(_texts), status=draw(st.sampled_from(STATUSES)), score=draw(_numbers), max_score=draw(_numbers),
        levels=draw(st.dictionaries(_texts, st.fixed_dictionaries({"score": _numbers, "max_score": _numbers}),
                                    max_size=3)),
        checks=checks, integrity_violations=draw(_ids), message=draw(_texts), seed=draw(st.integers(0, 2 ** 64)),
        interview=interview, output=draw(st.dictionaries(_texts, _texts, max_size=2)),
        timings=draw(st.dictionaries(_texts, _numbers, max_size=2)), grader_version=draw(_texts),
        integrity_review=tuple(draw(st.lists(st.builds(ReviewEntry, st.none() | st.integers(), _texts, _texts),
                                             max_size=2))),
        root_causes=tuple(draw(st.lists(root_causes(), max_size=3))), isolation=draw(_texts),
        isolation_note=draw(_texts), source_sha256=draw(_texts), diagnosis_error=draw(_texts),
        source_note=draw(_texts), variant=draw(_texts), agreements=draw(st.dictionaries(_texts, _texts, max_size=2)))


@given(reports())
def test_any_report_reads_back_from_its_json_byte_for_byte(report):
    text = _json(report)
    assert _json(Report.from_dict(json.loads(text))) == text
