"""The kill matrix: every catalogued bug is caught, and diagnosed as itself; the reference fails nothing."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cli import audit as audit_module
from harness.cli.audit import Audit, BugRow, audit_levels, render_audit, run_audit
from harness.diagnosis.catalogue import BUGS, bug

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def audit(short_deep_chain) -> Audit:
    # Few random graphs: the spec cases and targeted checks catch most bugs on their own.
    return run_audit(max_examples=20)


def test_the_reference_engine_fails_no_check(audit):
    assert audit.reference_failures == ()


def test_every_bug_fails_a_check_of_its_levels(audit):
    assert [row.bug.id for row in audit.rows] == [b.id for b in BUGS]
    uncaught = [row.bug.id for row in audit.rows if not row.caught]
    assert uncaught == [], f"no check catches {uncaught}"
    for row in audit.rows:
        levels = audit_levels(row.bug)
        assert row.integrity or any(check.split(".")[0].removeprefix("spec:") in levels for check in row.caught_by)


def test_every_bug_graded_as_a_submission_is_its_own_first_root_cause(audit):
    wrong = {row.bug.id: row.first_cause for row in audit.rows if row.first_cause != row.bug.id}
    assert wrong == {}


def test_the_matrix_says_so(audit):
    text = render_audit(audit)
    assert text.splitlines()[-2:] == ["the reference engine fails no check",
                                      f"every bug is caught ({len(BUGS)} of {len(BUGS)})"]


# ---- rendering and the command, without grading ----------------------------------------


def _small_audit(caught: bool) -> Audit:
    rows = (BugRow(bug("overwrite"), ("core.accumulation", "spec:core.reuse.square", "spec:core.reuse.cube"),
                   first_cause="overwrite"),
            BugRow(bug("recursive_topo"), ("followups.deep_graph",) if caught else (),
                   first_cause="recursive_topo" if caught else None))
    return Audit(rows, (), ("core.accumulation", "core.order", "followups.deep_graph", "spec:core.reuse.square",
                            "spec:core.reuse.cube"), {"seed": 0, "max_examples": 200})


def test_the_matrix_lists_checks_per_bug_and_bugs_per_check():
    assert render_audit(_small_audit(caught=True)).splitlines() == [
        "kill matrix: 2 catalogued bugs against 5 checks (seed 0, 200 random graphs)",
        "",
        "  bug             level      caught by",
        "  overwrite       core       core.accumulation, 2 spec cases",
        "  recursive_topo  followups  followups.deep_graph",
        "",
        "checks that catch bugs:",
        "  core.accumulation     overwrite",
        "  followups.deep_graph  recursive_topo",
        "  spec cases            2 of 2 catch at least one bug",
        "  (none)                core.order",
        "",
        "bugs no case of the shipped library catches (1; a case that catches one adds most): recursive_topo",
        "",
        "the reference engine fails no check",
        "every bug is caught (2 of 2)",
    ]


def test_the_matrix_says_what_the_authors_own_cases_catch():
    small = _small_audit(caught=True)
    audit = Audit(small.rows, (), (*small.checks, "spec:mine.tree"), {"seed": 0, "max_examples": 200,
                                                                      "specs": ["my_specs"]},
                  own=("spec:core.reuse.cube", "spec:mine.tree"))
    text = render_audit(audit)
    assert ("your cases (2, from my_specs) catch 1 of 2 catalogued bugs:\n  overwrite: spec:core.reuse.cube\n"
            "  catch no bug: spec:mine.tree") in text
    # A library case (core.reuse.square) catches overwrite; only a targeted check catches recursive_topo.
    assert "bugs no case of the shipped library catches (1; a case that catches one adds most): recursive_topo" \
        in text
    assert audit.to_dict()["own_cases"] == {"cases": ["spec:core.reuse.cube", "spec:mine.tree"],
                                            "catch": {"overwrite": ["spec:core.reuse.cube"]}}


def test_a_bug_nothing_catches_is_listed_loudly_and_fails_the_command(monkeypatch):
    audit = _small_audit(caught=False)
    assert render_audit(audit).splitlines()[-2:] == ["NOT CAUGHT: 1 bug(s) fail no check:",
                                                      "  - recursive_topo: recursive topological sort"]
    seen = {}

    def fake(**options):
        seen.update(options)
        return audit

    monkeypatch.setattr(audit_module, "run_audit", fake)
    result = CliRunner().invoke(main, ["spec", "audit", "--bug", "recursive_topo", "--max-examples", "7"])
    assert result.exit_code == 1
    assert "  recursive_topo  followups  NOTHING" in result.output
    assert seen == {"specs": (), "max_examples": 7, "seed": 0, "bugs": ("recursive_topo",), "progress": seen["progress"]}


def test_an_unknown_bug_is_a_usage_error():
    result = CliRunner().invoke(main, ["spec", "audit", "--bug", "nope"])
    assert result.exit_code == 2
    assert "Invalid value for --bug: no catalogued bug 'nope' (one of: overwrite, " in result.output
