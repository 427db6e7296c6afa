"""Fix first on a half-written file and on the untouched template, as a new user meets it.

The half-written file has relu still a stub, a matmul rule with the transpose on the wrong side,
and a backward that runs each node as soon as it is discovered: its first cause after "implement
relu" is the order (it never says "overwritten", a cause its passes rule out), and the stub is
"not attempted", never an error. The untouched template errs nowhere and has one first item.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.grade import GradeOptions, grade
from harness.report.render import render_text

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def half_written(launcher):
    return grade(DATA / "half_written.py", GradeOptions(level="core"), launcher)


def test_a_stub_is_not_attempted_and_never_an_error(half_written):
    relu = [c for c in half_written.checks if c.kind == "stub"]
    assert relu and all(c.reason == "relu" and c.outcome == "not_attempted" for c in relu)
    assert not [c.id for c in half_written.checks if c.outcome == "error" and "NotImplementedError" in c.message]
    first = half_written.root_causes[0]
    assert first.symptom == "missing_member" and first.name.startswith("implement `relu`")


def test_the_order_comes_first_and_nothing_is_called_overwritten(half_written):
    causes = [c for c in half_written.root_causes if c.symptom != "missing_member"]
    assert causes[0].concept == "order", [c.name for c in causes]
    assert causes[0].confidence in ("confirmed", "likely")
    assert not [c for c in causes if "overwrit" in c.name], [c.name for c in causes]
    assert any(c.op == "matmul" or "matmul" in c.name for c in causes), [c.name for c in causes]


def test_a_cause_that_is_not_confirmed_says_so(half_written):
    text = render_text(half_written, colour=False)
    for cause in half_written.root_causes:
        if cause.confidence == "likely":
            assert f"likely: {' '.join(cause.name.split())}" in " ".join(text.split())  # a long title wraps


def test_the_untouched_template_errs_nowhere_and_has_one_first_item(launcher, tmp_path):
    template = tmp_path / "solution.py"
    template.write_text((ROOT / "candidate_template" / "solution.py").read_text())
    report = grade(template, GradeOptions(), launcher)
    assert {c.outcome for c in report.checks} == {"not_attempted"}
    assert len(report.root_causes) == 1
    cause = report.root_causes[0]
    assert cause.name.startswith("implement the core: `__add__`, `__mul__`, `__matmul__`, `relu`, `sum`, `backward`")
    assert report.interview.gates_not_attempted and not report.interview.gates_failed
