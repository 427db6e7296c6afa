"""What to fix first: a missing core method, then the engine's structure, core ops, follow-ups, extensions.

Also: gates that never ran are "not attempted", not "failed"; a class under another name is suggested
from the source alone. (``--watch`` is one plain grade of each save: tests/test_watch.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.diagnosis.mutants import reference_source
from harness.grade import GradeOptions, grade
from harness.preflight import Unrunnable, read_submission
from harness.report.render import render_text

pytestmark = pytest.mark.slow

BUGS = Path(__file__).resolve().parents[1] / "corpus" / "bugs"


def test_a_missing_core_method_is_the_first_thing_to_fix(launcher, tmp_path):
    path = tmp_path / "solution.py"
    source = reference_source()
    assert source.count("    def __matmul__(") == 1
    path.write_text(source.replace("    def __matmul__(", "    def matmul_not_yet("))
    report = grade(path, GradeOptions(levels=("core",), max_examples=10), launcher)
    first = report.root_causes[0]
    waiting = [c.id for c in report.checks if c.outcome == "not_attempted" and "__matmul__" in c.message]
    assert waiting and list(first.waiting) == waiting
    assert first.name == f"implement `__matmul__`: {len(waiting)} core checks wait for it"
    interview = report.interview
    assert interview.gates_failed == () and interview.gates_not_attempted
    assert not interview.passed
    score_line = " ".join(render_text(report).rsplit("\nscore ", 1)[1].split())  # wrapped to the page
    assert "gates not attempted: " in score_line


def test_a_class_under_another_name_is_suggested_from_the_source(tmp_path):
    path = tmp_path / "value.py"
    path.write_text("class Value:\n    def __add__(self, o): ...\n    def __mul__(self, o): ...\n"
                    "    def backward(self): ...\n\nclass Helper:\n    pass\n")
    with pytest.raises(Unrunnable, match=r"no class named 'Tensor'; did you mean --class-name Value\?"):
        read_submission(path, "Tensor")
    # Nothing like an engine: no suggestion, still refused before anything runs.
    path.write_text("class Helper:\n    def backward(self): ...\n")
    with pytest.raises(Unrunnable, match=r"no class named 'Tensor'$"):
        read_submission(path, "Tensor")


@pytest.mark.parametrize("source", [
    "from engine_parts import *\n",
    "globals()['Tensor'] = type('Tensor', (), {})\n",
    "def __getattr__(name):\n    return object\n",
    "from parts import Engine as Tensor\n",
])
def test_a_name_bound_at_run_time_is_left_to_the_run(tmp_path, source):
    path = tmp_path / "solution.py"
    path.write_text(source)
    assert read_submission(path, "Tensor").path == path


def test_the_graders_own_sum_is_never_the_candidates_bug(launcher, tmp_path):
    path = tmp_path / "solution.py"
    source = reference_source()
    assert source.count("    def sum(self) -> Tensor:") == 1
    path.write_text(source.replace("    def sum(self) -> Tensor:", "    def total(self) -> Tensor:"))
    report = grade(path, GradeOptions(levels=("core",), max_examples=10), launcher)
    assert not [c.id for c in report.checks if c.outcome in ("failed", "error", "timeout")]
    summed = [c for c in report.checks if "the grader sums this one-element output" in c.message]
    assert summed and all(c.outcome == "not_attempted" for c in summed)
    waiting = [c.id for c in report.checks if c.outcome == "not_attempted"]
    assert report.root_causes[0].name == f"implement `sum`: {len(waiting)} core checks wait for it"


def test_a_wrong_gradient_of_an_extension_comes_before_a_graph_kept_alive(launcher, tmp_path):
    """Keeping the graph after backward costs memory; a wrong gradient is wrong at any level. An engine that
    never attempted the memory follow-up must not be sent there before its wrong tanh rule."""
    path = tmp_path / "solution.py"
    source = reference_source()
    rule, release = "lambda g, s: (g * (1 - s[0] * s[0]),)", "                node.release()\n"
    assert source.count(rule) == 1 and source.count(release) == 1
    path.write_text(source.replace(rule, "lambda g, s: (g * (1 - s[0]),)").replace(release, ""))
    report = grade(path, GradeOptions(max_examples=10), launcher)
    failing = {c.id: c.reason for c in report.checks if c.outcome == "failed"}
    assert failing.get("followups.memory_release") == "graph_alive" and "extensions.op.tanh" in failing
    names = [c.name for c in report.root_causes]
    assert report.root_causes[0].op == "tanh", names
    assert "graph kept alive after backward" in names[1:]


def test_an_operand_that_holds_a_nan_is_not_taken_for_one_written_in_place(launcher, tmp_path):
    """sigmoid as exp(x) / (1 + exp(x)) is nan for large x; the sum that reads it leaves it as it was, and a
    nan compares unequal to itself: that is no op writing into its input."""
    path = tmp_path / "solution.py"
    source = reference_source()
    right = "        out = self.data.sigmoid()\n"
    assert source.count(right) == 1
    path.write_text(source.replace(right, "        out = self.data.exp() / (1 + self.data.exp())\n"))
    report = grade(path, GradeOptions(max_examples=10), launcher)
    assert [c.id for c in report.checks if c.outcome == "failed"], "large inputs must show the overflow"
    assert not [c.name for c in report.root_causes if c.symptom == "in_place" or "writes into" in c.name]
    first = report.root_causes[0]
    assert (first.op, first.symptom) == ("sigmoid", "forward_overflow"), [c.name for c in report.root_causes]
