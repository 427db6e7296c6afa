"""Replays kept across grades: found by content (never by identity), bounded, and never changing a diagnosis."""

from __future__ import annotations

import torch

from harness.checks.builders import program, tensor
from harness.diagnosis import replay_cache
from harness.diagnosis.matching import match_evidence, replay
from harness.diagnosis.mutants import load_mutant
from harness.program import Leaf, Program


def _square(value=(1.0, -2.0), dtype=torch.float64) -> Program:
    return program({"x": (tensor([list(value)]).to(dtype), True)}, [("a", "mul", ["x", "x"]), ("y", "sum", ["a"])])


def _counting():
    calls = []

    def compute(result):
        calls.append(result)
        return result
    return calls, compute


def test_equal_graphs_are_replayed_once_and_different_ones_apart():
    replay_cache.forget_all()
    calls, compute = _counting()
    first = replay_cache.remembered(_square(), "r", lambda: compute(1))
    again = replay_cache.remembered(_square(), "r", lambda: compute(2))  # another object, the same content
    assert (first, again, len(calls)) == (1, 1, 1)
    for other in (_square((1.0, 2.0)), _square(dtype=torch.float32)):
        assert replay_cache.remembered(other, "r", lambda: compute(3)) == 3
    assert replay_cache.remembered(_square(), "another replay", lambda: compute(4)) == 4
    two_passes = Program(_square().leaves, _square().steps, "y", passes=2)
    assert replay_cache.remembered(two_passes, "r", lambda: compute(5)) == 5
    assert len(calls) == 5


def test_a_key_that_is_not_plain_data_is_never_kept():
    replay_cache.forget_all()
    calls, compute = _counting()
    for _ in range(2):
        replay_cache.remembered(_square(), ("r", torch.ones(1)), lambda: compute(1))
    assert len(calls) == 2


def test_the_store_stays_within_its_budget(monkeypatch):
    replay_cache.forget_all()
    monkeypatch.setattr(replay_cache, "BUDGET", 3 * _square().size())
    calls, compute = _counting()
    graphs = [_square((float(i), 1.0)) for i in range(5)]
    for g in graphs:
        replay_cache.remembered(g, "r", lambda: compute(0))
    assert len(replay_cache._kept) == 3 and replay_cache._total <= replay_cache.BUDGET
    replay_cache.remembered(graphs[-1], "r", lambda: compute(0))  # the newest is kept ...
    replay_cache.remembered(graphs[0], "r", lambda: compute(0))   # ... the oldest went first
    assert len(calls) == 6
    big = Program((Leaf("x", torch.zeros(replay_cache.LARGEST + 1)),), (), "x")
    replay_cache.remembered(big, "r", lambda: compute(0))
    replay_cache.remembered(big, "r", lambda: compute(0))
    assert len(calls) == 8


def test_a_kept_replay_matches_as_a_fresh_one_does():
    replay_cache.forget_all()
    p = _square()
    observed = replay(p, load_mutant("overwrite", 0))
    cold = match_evidence(p, observed, p.run_torch())
    warm = match_evidence(_square(), observed, _square().run_torch())
    assert cold == warm and any(m.bug == "overwrite" for m in cold)


def test_a_grade_and_its_diagnosis_never_import_sympy():
    """torch imports sympy the first time it is given an output gradient (autograd.grad(y, x, g),
    y.backward(g)): a third of a second or more of a `grade FILE` run. The replays and the property
    oracle ask for the same numbers as the gradient of (y * g).sum()."""
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    solutions = Path(__file__).resolve().parents[1] / "solutions"
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from harness.grade import GradeOptions, grade
        from harness.sandbox.launch import Launcher
        assert "sympy" not in sys.modules, "imported before the grade"
        with Launcher("auto") as launcher:
            report = grade(Path({str(solutions / "overwrite_grad.py")!r}), GradeOptions(max_examples=10), launcher)
        assert report.root_causes and report.root_causes[0].bug == "overwrite", report.root_causes[:1]
        print("sympy" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "False"
