"""No internal error loses a report: a fault in the diagnosis leaves every verdict, score and exit code."""

from __future__ import annotations

import json

from harness.diagnosis import causes
from harness.grade import GradeOptions, grade
from harness.ops import OPS
from harness.report.model import exit_code
from harness.report.render import render_json, render_markdown, render_text

from rule_mutants import rule_mutant_source


def test_every_op_renders_without_its_params():
    # The diagnosis titles a group by the op alone; ops whose params have no default used to raise.
    for spec in OPS.values():
        text = spec.render(["a", "b"][: len(spec.slots)])
        assert text and "{" not in text, spec.name
    assert OPS["pow"].render(["a"]) == "a ** p"
    assert OPS["reshape"].render(["a"], {"shape": (3, 2)}) == "a.reshape((3, 2))"


def test_a_pow_bug_no_catalogued_bug_explains_is_graded_and_named(launcher, tmp_path):
    path = tmp_path / "solution.py"
    path.write_text(rule_mutant_source(("pow", 0, "sign")))
    report = grade(path, GradeOptions(levels=("extensions",), max_examples=10), launcher)
    assert report.status == "graded" and exit_code(report) == 1 and not report.diagnosis_error
    first = report.root_causes[0]
    assert (first.op, first.operand, first.symptom) == ("pow", "a", "sign"), first.name
    assert first.name.startswith("`a ** ")


def test_a_fault_in_the_diagnosis_keeps_the_verdicts(launcher, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("shape")

    monkeypatch.setattr(causes, "diagnose", broken)
    path = tmp_path / "solution.py"
    path.write_text(rule_mutant_source(("sub", 1, "sign")))
    report = grade(path, GradeOptions(levels=("extensions",), max_examples=10), launcher)
    assert report.status == "graded" and exit_code(report) == 1
    assert report.root_causes == () and "KeyError" in report.diagnosis_error
    failed = [c for c in report.checks if c.outcome == "failed"]
    assert failed and report.score > 0
    assert json.loads(render_json(report))["diagnosis_error"] == report.diagnosis_error
    assert "no root causes: internal grader error in the diagnosis: KeyError" in render_text(report)
    assert "internal grader error in the diagnosis" in render_markdown(report)
