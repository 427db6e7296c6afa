"""--variant function: each op a torch.autograd.Function, its formulas graded through torch's engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.grade import GradeOptions, grade
from harness.report.model import exit_code
from harness.report.render import render_markdown, render_text
from harness.variants import NOT_CREDITED_TEXT, allowed_violation, not_credited

SOLUTION = Path(__file__).parent / "solutions" / "function_ops.py"
FAST = dict(level="core", max_examples=20)
FAILING = ("failed", "error", "timeout")

_MUL = "    def __mul__(self, other):\n        return self._apply(Mul, self, other)\n"
_TORCH_MUL = ("    def __mul__(self, other):\n"
              "        tracked = self._torch * other._torch  # torch's own formula for the product\n"
              "        out = Tensor(tracked.detach(), tracked.requires_grad)\n"
              "        out._torch = tracked\n"
              "        out._leaves = list({id(l): l for t in (self, other) for l in t._leaves}.values())\n"
              "        return out\n")
_MATMUL_RULE = "return g @ b.T, a.T @ g"


def _edited(folder: Path, name: str, old: str, new: str) -> Path:
    source = SOLUTION.read_text()
    assert source.count(old) == 1
    path = folder / f"{name}.py"
    path.write_text(source.replace(old, new))
    return path


@pytest.fixture(scope="module")
def graded(launcher, tmp_path_factory):
    folder = tmp_path_factory.mktemp("variant")
    runs = {
        "function": (SOLUTION, "function"),
        "tensor": (SOLUTION, "tensor"),
        "torch_mul": (_edited(folder, "torch_mul", _MUL, _TORCH_MUL), "function"),
        "flipped": (_edited(folder, "flipped", _MATMUL_RULE, "return g @ b, a @ g"), "function"),
    }
    return {name: grade(path, GradeOptions(**FAST, variant=variant), launcher) for name, (path, variant) in
            runs.items()}


def test_a_function_solution_grades_under_the_variant(graded):
    report = graded["function"]
    assert report.status == "graded" and exit_code(report) == 0 and report.interview.passed
    outcomes = {c.id: c for c in report.checks}
    for not_its_own in ("core.accumulation", "core.order", "core.linear_time", "core.requires_grad"):
        assert outcomes[not_its_own].outcome == "skipped" and outcomes[not_its_own].max_points == 0
        assert outcomes[not_its_own].message == NOT_CREDITED_TEXT
    for formulas in ("core.properties", "core.grad_types", "core.conventions", "spec:core.matmul.nonsquare"):
        assert outcomes[formulas].outcome == "passed", outcomes[formulas].message
    assert report.score == pytest.approx(report.max_score)
    assert report.to_dict()["variant"] == "function"
    assert "variant: function" in render_text(report).splitlines()[0]
    assert "Variant: function" in render_markdown(report)


def test_without_the_flag_it_is_a_violation(graded):
    report = graded["tensor"]
    assert report.status == "integrity_violation" and exit_code(report) == 4
    assert "line 10: uses torch.autograd.Function: torch's autograd" in report.integrity_violations


def test_a_formula_of_torchs_own_is_a_violation_under_the_variant(graded):
    report = graded["torch_mul"]
    assert report.status == "integrity_violation"
    # Seen as torch records it, at the product's line (87: ``tracked = self._torch * other._torch``).
    assert report.integrity_violations == ("at run time: torch's autograd computed a backward formula that is not "
                                           "the submission's (MulBackward0) (line 87)",)


def test_the_backward_formulas_are_checked_through_torchs_engine(graded):
    report = graded["flipped"]
    failing = {c.id for c in report.checks if c.outcome in FAILING}
    assert {"core.properties", "core.grad_types"} <= failing
    assert not report.interview.passed


def test_what_the_variant_allows():
    assert allowed_violation("line 3: uses torch.autograd.Function: torch's autograd", "function")
    assert allowed_violation("at run time: torch's autograd engine ran a backward pass (line 9)", "function")
    assert not allowed_violation("line 3: uses torch.autograd.Function: torch's autograd", "tensor")
    assert not allowed_violation("line 5: uses torch.autograd.grad: torch's autograd", "function")
    assert not allowed_violation("at run time: called torch.autograd.grad (line 7)", "function")
    assert not allowed_violation("at run time: torch's autograd computed a backward formula that is not the "
                                 "submission's (MulBackward0)", "function")
    assert not_credited("order", "function") == NOT_CREDITED_TEXT
    assert not_credited("matmul", "function") is None and not_credited("order", "tensor") is None


def test_an_unknown_variant_is_refused(tmp_path, launcher):
    path = tmp_path / "s.py"
    path.write_text("class Tensor: pass\n")
    with pytest.raises(HarnessError, match="unknown variant 'graph' \\(choose from tensor, function\\)"):
        grade(path, GradeOptions(variant="graph"), launcher)
