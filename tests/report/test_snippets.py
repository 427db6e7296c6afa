"""Snippets reproduce a failure from any folder, and end by failing exactly where the check failed."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.grade import GradeOptions, grade
from harness.program import Leaf, Program, Step
from harness.report.snippets import MAX_NUMBERS, reproduce

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "tests" / "solutions"


@pytest.fixture(scope="module")
def reports():
    return {name: grade(SOLUTIONS / name, GradeOptions(level="core", max_examples=30))
            for name in ("overwrite_grad.py", "flipped_transpose.py", "sum_not_expanded.py")}


def _run(snippet: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", snippet], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_every_failing_snippet_fails_when_run_from_another_folder(reports, tmp_path):
    ran = 0
    for name, report in reports.items():
        for check in report.checks:
            if check.outcome not in ("failed", "error") or "snippet" not in check.details:
                continue
            done = _run(check.details["snippet"], tmp_path)
            assert done.returncode != 0, f"{name} {check.id}: the snippet passed\n{check.details['snippet']}"
            assert "ModuleNotFoundError" not in done.stderr, done.stderr
            observed = check.evidence.observation if check.evidence is not None else None
            if observed is not None:
                # The snippet fails the way the check saw it fail: the same exception, or the assertion.
                error = observed.error["type"] if observed.error else "AssertionError"
                assert f"{error}:" in done.stderr, f"{name} {check.id}\n{done.stderr[-800:]}"
            ran += 1
    assert ran >= 10


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
