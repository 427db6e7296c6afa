"""The concept registry: every check's concept is known, every example runs, `grade explain` prints them."""

import contextlib
import io
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.concepts import DEPTHS, concepts, explain_line
from harness.diagnosis.catalogue import BUGS
from harness.checks.registry import Check
from harness.checks.run import run_check
from harness.grade import GradeOptions, planned_checks
from harness.ops import OPS

INTERVIEW_TOPICS = ("order", "routing", "pooling", "matmul", "broadcasting", "embedding", "saved_tensors",
                    "properties", "mean_vs_sum", "memory", "batchnorm")
"""The concepts the interview asks about: every one must exist, whatever else the registry holds."""


def test_every_check_names_a_known_concept():
    known = set(concepts())
    plan = planned_checks(GradeOptions())
    assert len(plan) > 100
    unknown = {(c.id, c.concept) for c in plan if c.concept not in known}
    assert not unknown
    assert {spec.concept for spec in OPS.values()} <= known
    assert {bug.concept for bug in BUGS} <= known


def test_the_interview_topics_are_concepts_with_four_depths():
    for name in INTERVIEW_TOPICS:
        c = concepts()[name]
        assert c.question.endswith("?") and all(len(c.depths[d]) > 40 for d in DEPTHS)


def test_the_new_concepts_are_used_by_the_checks_they_describe():
    by_id = {c.id: c.concept for c in planned_checks(GradeOptions())}
    assert by_id["extensions.op.max_pool2d"] == by_id["extensions.op.avg_pool2d"] == "pooling"
    assert by_id["extensions.op.index"] == by_id["spec:extensions.embedding.repeated_id"] == "embedding"
    assert by_id["extensions.op.batch_norm"] == "batchnorm"
    assert by_id["extensions.op.mean"] == "mean_vs_sum"


@pytest.mark.parametrize("name", list(concepts()))
def test_every_example_runs(name):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(concepts()[name].example, f"<{name} example>", "exec"), {})
    assert out.getvalue().strip()


def test_explain_lists_every_concept():
    result = CliRunner().invoke(main, ["explain"])
    assert result.exit_code == 0
    for name, c in concepts().items():
        assert f"  {name}" in result.output and c.title in result.output


def test_explain_prints_four_depths_the_question_and_the_example():
    result = CliRunner().invoke(main, ["explain", "matmul"])
    assert result.exit_code == 0
    assert result.output.startswith("matmul: Matrix product gradients\n")
    assert "Question: For Y = A @ B with upstream gradient G" in result.output
    assert [d for d in DEPTHS if f"\n{d}: " in result.output] == list(DEPTHS)
    assert "  (A @ B).backward(G)" in result.output
    one = CliRunner().invoke(main, ["explain", "matmul", "--depth", "senior"])
    assert "\nsenior: " in one.output and "\njunior: " not in one.output


@pytest.mark.parametrize("name", list(concepts()))
def test_every_concept_fits_an_80_by_40_screen(monkeypatch, name):
    monkeypatch.setenv("COLUMNS", "80")
    lines = CliRunner().invoke(main, ["explain", name]).output.splitlines()
    assert len(lines) <= 40 and max(map(len, lines)) <= 80  # the example's code included
    listed = CliRunner().invoke(main, ["explain"]).output.splitlines()
    assert max(map(len, listed)) <= 80


def test_explain_an_unknown_concept_is_a_usage_error():
    result = CliRunner().invoke(main, ["explain", "gradients"])
    assert result.exit_code == 2
    assert result.output.startswith("error: unknown concept 'gradients'; `grade explain` lists them (requires_grad, ")
    typo = CliRunner().invoke(main, ["explain", "accumulaton"])
    assert typo.output.startswith("error: unknown concept 'accumulaton' (did you mean accumulation?); ")


def _ctx():
    shared = SimpleNamespace(why_skip=lambda: None)
    return SimpleNamespace(shared=shared, begin=lambda *a, **k: None)


def test_a_failing_checks_hint_ends_with_the_explain_line():
    from harness.checks.context import Failed

    def run(ctx):
        raise Failed("a.grad is wrong")

    planned = Check("core.x", "core", "accumulation", "t", "Add every contribution with +=", frozenset(),
                    5.0, run)
    result = run_check(planned, _ctx(), {})
    assert result.details["hint"] == "Add every contribution with +=. Read `grade explain accumulation`."
    assert result.details["hint"].endswith(explain_line(result.concept))
    passing = run_check(Check("core.y", "core", "order", "t", "h", frozenset(), 5.0, lambda ctx: None), _ctx(), {})
    assert "hint" not in passing.details


ROOT = Path(__file__).resolve().parent.parent


def test_the_concept_table_of_the_spec_docs_is_the_data_files():
    from harness.concepts import with_table

    docs = ROOT / "docs" / "specs.md"
    text = docs.read_text()
    assert with_table(text) == text, "docs/specs.md lists other concepts: run `python -m harness.concepts docs/specs.md`"
    assert all(f"| `{name}` |" in text for name in concepts())
