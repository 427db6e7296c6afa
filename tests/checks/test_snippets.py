"""Snippets reproduce a failure from any folder, and end by failing exactly where the check failed."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.grade import GradeOptions, grade
from harness.program import Leaf, Program, Step
from harness.checks.snippets import MAX_NUMBERS, reproduce

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "tests" / "solutions"


@pytest.fixture(scope="module")
def reports(launcher):
    return {name: grade(SOLUTIONS / name, GradeOptions(level="core", max_examples=30), launcher)
            for name in ("overwrite_grad.py", "flipped_transpose.py", "sum_not_expanded.py")}


_RUNNER = """
import json, sys, traceback
outcomes = []
for snippet in json.load(sys.stdin):
    try:
        exec(compile(snippet, "<snippet>", "exec"), {"__name__": "__snippet__"})
        outcomes.append(None)
    except BaseException as exc:
        outcomes.append(type(exc).__name__)
print(json.dumps(outcomes))
"""


def _run_all(snippets: list[str], cwd: Path) -> list[str | None]:
    """Each snippet run in a fresh namespace of one interpreter started in ``cwd`` (one torch import for all):
    the name of the exception each raised, None for one that ran through."""
    done = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(snippets), cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_every_failing_snippet_fails_when_run_from_another_folder(reports, tmp_path):
    failing = [(name, check) for name, report in reports.items() for check in report.checks
               if check.outcome in ("failed", "error") and "snippet" in check.details]
    assert len(failing) >= 10
    outcomes = _run_all([check.details["snippet"] for _, check in failing], tmp_path)
    for (name, check), raised in zip(failing, outcomes):
        assert raised is not None, f"{name} {check.id}: the snippet passed\n{check.details['snippet']}"
        assert raised != "ModuleNotFoundError", f"{name} {check.id}: the snippet cannot import the submission"
        observed = check.evidence.observation if check.evidence is not None else None
        if observed is not None:
            # The snippet fails the way the check saw it fail: the same exception, or the assertion.
            assert raised == (observed.error["type"] if observed.error else "AssertionError"), f"{name} {check.id}"


def test_a_failing_snippet_ends_with_the_failing_assertion(reports):
    check = next(c for c in reports["overwrite_grad.py"].checks if c.id == "core.accumulation")
    last = check.details["snippet"].splitlines()[-1]
    assert last.startswith("assert torch.allclose(a.grad.double(), expected, rtol=1e-07, atol=")


def test_dead_steps_are_left_out_when_the_failure_stays_the_same(reports):
    for report in reports.values():
        for check in report.checks:
            if check.evidence is not None and "snippet" in check.details:
                assert check.evidence.program.live() is check.evidence.program, check.id


def test_large_inputs_are_rebuilt_from_their_recipe_not_written_out(tmp_path):
    big = torch.randn(64, 128, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    recipe = "torch.randn((64, 128), generator=torch.Generator().manual_seed(5), dtype=torch.float64)"
    program = Program((Leaf("W", big, True, recipe),), (Step("y", "sum", ("W",)),), "y")
    snippet = reproduce(program, tmp_path / "solution.py", "Tensor")
    assert recipe in snippet
    assert len(re.findall(r"-?\d+\.\d+", snippet)) <= MAX_NUMBERS
