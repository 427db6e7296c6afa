"""Programs drawn ahead of time are exactly the ones the property search would draw, so the grade is the same."""

import tomllib
from pathlib import Path

import hypothesis
import pytest
from hypothesis import given, seed

from harness.checks import examples
from harness.checks.examples import SHIPPED, drawn_programs, search_settings
from harness.checks.properties import default_searches
from harness.checks.strategies import op_graphs

STRATEGY = op_graphs(ops=["add", "mul", "matmul", "relu", "sum"], integer_values=True)
STALE = "stale or missing shipped programs: run python -m harness.checks.redraw"


def _first_failure_seen_by_the_search(fails, max_examples: int, seed_value: int):
    seen = []

    @search_settings(max_examples)
    @seed(seed_value)
    @given(STRATEGY)
    def prop(program):
        if fails(program):
            seen.append(program)
            raise AssertionError

    try:
        prop()
    except AssertionError:
        pass
    return seen[0] if seen else None


@pytest.mark.parametrize("seed_value", [0, 1, 7])
def test_the_search_meets_the_first_failing_drawn_program_first(seed_value):
    programs = drawn_programs("test add-mul-matmul-relu-sum", STRATEGY, 60, seed_value)
    assert len(programs) == 60

    def fails(program):  # any engine bug that only some graphs show: here, one node on both sides of an op
        return any(len(s.args) == 2 and s.args[0] == s.args[1] for s in program.steps)

    first = next((p for p in programs if fails(p)), None)
    assert first is not None, "the drawn programs never show the bug: choose another"
    seen = _first_failure_seen_by_the_search(fails, 60, seed_value)
    assert seen is not None and seen.to_wire() == first.to_wire()


def test_the_shipped_programs_are_drawn_by_the_pinned_hypothesis():
    # The shipped programs are named after the hypothesis that drew them: the pin keeps a fresh
    # install on that version (another one grades the same, drawing at run time, slower).
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    pinned = [d.split("==")[1] for d in pyproject["project"]["dependencies"] if d.startswith("hypothesis==")]
    assert pinned == [hypothesis.__version__], (f"pyproject.toml pins hypothesis {pinned}, {hypothesis.__version__} "
                                                "is installed: pip install -e . (or move the pin and redraw)")


def test_the_shipped_programs_are_what_the_default_grade_draws():
    shipped = sorted(p.name for p in SHIPPED.glob("*.json.gz"))
    expected = []
    for key, make, max_examples, seed_value in default_searches():
        name = examples._name(key, max_examples, seed_value)
        expected.append(f"{name}.json.gz")
        shipped_programs = examples._load(SHIPPED / f"{name}.json.gz")
        assert shipped_programs is not None, f"{STALE} (none for {key})"
        drawn = examples._draw(make(), max_examples, seed_value)
        assert [p.to_wire() for p in shipped_programs] == [p.to_wire() for p in drawn], f"{STALE} ({key})"
    assert shipped == sorted(expected), STALE


def test_a_cache_folder_that_cannot_be_written_only_costs_a_new_draw(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr(examples, "_memory", {})
    programs = drawn_programs("test unwritable cache", STRATEGY, 5, 3)
    assert len(programs) == 5
