"""The shipped spec library: every case is valid, and the reference engine passes each one through the grader."""

from pathlib import Path

import pytest

from harness.grade import GradeOptions, grade
from harness.specs import DEFAULT_SPECS_DIR, load_cases

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cases():
    found = load_cases([DEFAULT_SPECS_DIR])
    assert found, "the spec glob found no cases"
    return found


def test_the_library_is_large_and_covers_every_level(cases):
    assert len(cases) >= 60
    assert {case.level for case in cases} == {"core", "followups", "extensions"}


def _states(case, name, values) -> bool:
    stated = case.explicit.grads.get(name) if case.explicit is not None else None
    return stated is not None and stated.tolist() == values


def test_the_worked_examples_are_there_with_their_numbers(cases):
    assert any(_states(case, "a", 7.0) for case in cases), "a * a + a with a = 3 gives a.grad = 7"
    assert any(_states(case, "x", [[1.0, 0.5]]) and _states(case, "W", [[1.0, 0.0], [2.0, 0.0]]) for case in cases)


def test_the_reference_passes_every_case_through_the_grader(cases, launcher):
    report = grade(ROOT / "reference" / "engine.py", GradeOptions(max_examples=1), launcher)
    spec_checks = {c.id: c for c in report.checks if c.id.startswith("spec:")}
    assert set(spec_checks) == {f"spec:{case.id}" for case in cases}
    failing = {cid: c.message for cid, c in spec_checks.items() if c.outcome != "passed"}
    assert failing == {}
