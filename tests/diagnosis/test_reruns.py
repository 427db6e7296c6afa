"""A replay that matches an engine's wrong gradients confirms a cause only when the engine gives the same
wrong gradients every run: one whose order changes between passes (a set's iteration order does) may match
a wrong replay by chance. The same engine with one fixed order is confirmed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.grade import GradeOptions, grade

ENGINE = Path(__file__).parent / "data" / "order_from_pass_count.py"


def _engine(tmp_path: Path, flip: bool) -> Path:
    text = ENGINE.read_text()
    assert "FLIP = True" in text
    path = tmp_path / f"order_{'flipped' if flip else 'fixed'}.py"
    path.write_text(text if flip else text.replace("FLIP = True", "FLIP = False"))
    return path


def test_the_engine_really_gives_one_graph_two_gradients(tmp_path):
    import runpy

    Tensor = runpy.run_path(str(_engine(tmp_path, True)))["Tensor"]
    seen = set()
    for _ in range(2):
        x = Tensor(torch.tensor(2.0, dtype=torch.float64), requires_grad=True)
        a = x * x
        (a * x + a + x).backward()
        seen.add(float(x.grad))
    assert len(seen) == 2 and 17.0 not in seen  # torch: 3x^2 + 2x + 1 = 17 at x = 2


@pytest.mark.parametrize("flip", [True, False], ids=["order_changes", "order_fixed"])
def test_a_replay_confirms_only_what_the_engine_repeats(launcher, tmp_path, flip):
    report = grade(_engine(tmp_path, flip), GradeOptions(level="core"), launcher)
    causes = [c for c in report.root_causes if c.symptom != "missing_member"]
    assert causes and causes[0].concept == "order", [c.name for c in causes]
    reruns = [p for c in causes for p in c.probes if p["probe"] == "the same failing graph, run again"]
    if flip:
        assert not [c.name for c in causes if c.confidence == "confirmed"]
        assert reruns and reruns[0]["observed"] == "different gradients"
    else:
        assert causes[0].confidence == "confirmed" and not reruns


LEFT_OVER = Path(__file__).parent / "data" / "visited_never_cleared.py"


def test_an_engine_without_state_never_gets_that_cause(launcher, tmp_path):
    """The same engine with the visited set made inside backward is correct: nothing to blame on the state."""
    path = tmp_path / "visited_per_call.py"
    text = LEFT_OVER.read_text()
    path.write_text(text.replace("        order = []\n", "        order = []\n        _visited = set()\n"))
    report = grade(path, GradeOptions(level="core"), launcher)
    assert report.status == "graded" and not report.root_causes, [c.name for c in report.root_causes]
