"""One bug, one verdict: engines with one convention deviation or one classic bug, graded in full.

Each file in ``tests/corpus/conventions/`` is correct but for the one thing its
docstring names; ``expected.yaml`` says which checks that may fail. A convention
deviation must be charged by its own check only, and every other check must
compare past it and judge its own concept.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from harness.grade import GradeOptions, grade, planned_checks
from harness.report.model import Report

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "conventions"
MANIFEST = CORPUS / "expected.yaml"
FAILING = ("failed", "error", "timeout")
KEYS = {"file", "options", "fails_exactly", "fails", "passes", "messages", "interview_passed", "gates_failed"}
OPTIONS = {"max_examples": 20}
"""Few random graphs: every situation a property check must cover runs before its search anyway."""

ENTRIES: list[dict[str, Any]] = yaml.safe_load(MANIFEST.read_text()) or []


def _id(entry: dict[str, Any]) -> str:
    return entry["file"].removesuffix(".py")


@pytest.fixture(scope="module")
def graded(launcher, reads_back) -> Callable[[dict[str, Any]], Report]:
    """The report of an entry's engine, graded once for the whole module."""
    done: dict[str, Report] = {}

    def run(entry: dict[str, Any]) -> Report:
        if entry["file"] not in done:
            options = GradeOptions(**{**OPTIONS, **(entry.get("options") or {})})
            done[entry["file"]] = reads_back(grade(CORPUS / entry["file"], options, launcher))
        return done[entry["file"]]

    return run


def test_every_engine_has_expectations_and_every_expectation_an_engine():
    on_disk = {p.name for p in CORPUS.glob("*.py")}
    assert on_disk, f"no engines in {CORPUS}"
    assert on_disk == {entry["file"] for entry in ENTRIES}


@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_manifest_entry_is_well_formed(entry):
    assert set(entry) <= KEYS, f"unknown keys {sorted(set(entry) - KEYS)}"
    assert ("fails_exactly" in entry) != ("fails" in entry), "give either fails_exactly or fails (with passes)"
    planned = [c.id for c in planned_checks(GradeOptions(**{**OPTIONS, **(entry.get("options") or {})}))]
    for key in ("fails_exactly", "fails", "passes", "messages", "gates_failed"):
        for name in entry.get(key) or []:
            assert fnmatch.filter(planned, name), f"{key}: {name!r} matches no planned check"


def _problems(entry: dict[str, Any], report: Report) -> list[str]:
    found = []
    if report.status != "graded":
        return [f"status is {report.status!r} ({report.message})"]
    checks = {c.id: c for c in report.checks}
    failing = sorted(c.id for c in report.checks if c.outcome in FAILING)
    if "fails_exactly" in entry:
        wanted = sorted(entry["fails_exactly"])
        for check_id in sorted(set(failing) - set(wanted)):
            found.append(f"{check_id} fails ({checks[check_id].message[:160]!r}), but only {wanted} may")
        for check_id in sorted(set(wanted) - set(failing)):
            found.append(f"{check_id} is {checks[check_id].outcome}, expected it to fail")
    for key, allowed in (("fails", FAILING), ("passes", ("passed",))):
        for pattern in entry.get(key) or []:
            for check_id in fnmatch.filter(checks, pattern) or [pattern]:
                outcome = checks[check_id].outcome if check_id in checks else "missing"
                if outcome not in allowed:
                    found.append(f"{check_id} is {outcome}, expected {key}")
    for check_id, text in (entry.get("messages") or {}).items():
        if text not in checks[check_id].message:
            found.append(f"{check_id}'s message {checks[check_id].message!r} does not say {text!r}")
    if report.interview.passed != entry["interview_passed"]:
        found.append(f"interview passed is {report.interview.passed}, expected {entry['interview_passed']}")
    if list(report.interview.gates_failed) != entry["gates_failed"]:
        found.append(f"gates failed are {report.interview.gates_failed}, expected {entry['gates_failed']}")
    return found


@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_engine_grades_as_expected(entry, graded):
    problems = _problems(entry, graded(entry))
    assert not problems, "\n".join([f"{entry['file']}:"] + problems)


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.get("fails_exactly")], ids=_id)
def test_a_failure_keeps_its_evidence_for_the_diagnosis(entry, graded):
    report = graded(entry)
    for check in report.checks:
        # The saved-tensor audit measures memory: it has no gradient for the diagnosis to replay.
        if check.outcome in FAILING and check.id != "followups.saved_tensors":
            assert check.evidence is not None, check.id
            assert check.evidence.program.steps, check.id
