"""The mutant matrix: every op x every way a backward rule goes wrong gives a graded report.

Each (op, operand, kind) engine is generated from the reference (``rule_mutants``). In
process, each one's smallest failing spec graphs go through the whole diagnosis and every
renderer: nothing raises, and where the failures show a wrong gradient the first root cause
names that op and operand. Then a few engines carrying many mutations at once are graded
as submissions in the sandbox: the report is ``graded`` with root causes and no
diagnosis error, whatever the mix.
"""

from __future__ import annotations

from collections import Counter

import pytest

from harness.checks.context import DEFAULT_PARTS, Evidence, judge
from harness.diagnosis.causes import diagnose_safely
from harness.diagnosis.matching import replay
from harness.grade import GradeOptions, grade
from harness.report.model import CheckResult, Report
from harness.report.formats import FORMATS, render
from harness.specs import DEFAULT_SPECS_DIR, load_cases

from rule_mutants import KINDS, load_rule_mutant, matrix, rule_mutant_source

pytestmark = pytest.mark.slow

CASES = sorted(load_cases([DEFAULT_SPECS_DIR]),
               key=lambda c: (len(c.program.steps), sum(leaf.value.numel() for leaf in c.program.leaves)))
PER_MUTATION = 2
"""Failing graphs diagnosed per mutation: the smallest ones, as a grade's shrinking would keep."""


def _failures(mutation: tuple[str, int, str]) -> list[CheckResult]:
    engine = load_rule_mutant(mutation)
    out = []
    for case in CASES:
        if mutation[0] not in case.program.ops_used():
            continue
        obs = replay(case.program, engine)
        verdict = judge(case.program, obs, case.expected, DEFAULT_PARTS)
        if verdict is not None:
            out.append(CheckResult(f"spec:{case.id}", case.level, case.concepts[0], case.title, "failed",
                                   verdict.message, evidence=Evidence(case.program, obs, case.expected)))
        if len(out) == PER_MUTATION:
            break
    return out


@pytest.fixture(scope="module")
def diagnosed() -> dict[tuple[str, int, str], tuple[list[CheckResult], tuple, str]]:
    out = {}
    for mutation in matrix():
        failing = _failures(mutation)
        if failing:
            out[mutation] = (failing, *diagnose_safely(failing)[1:])
    return out


def test_every_op_and_kind_is_in_the_matrix():
    mutations = matrix()
    assert {kind for _, _, kind in mutations} == set(KINDS)
    assert {("matmul", 1), ("sub", 1), ("pow", 0), ("max_pool2d", 0), ("conv2d", 1)} <= {m[:2] for m in mutations}


def test_the_diagnosis_and_every_renderer_are_total_over_the_matrix(diagnosed):
    assert len(diagnosed) > 150, "most mutations fail some spec case"
    for mutation, (failing, causes, error) in diagnosed.items():
        assert error == "", (mutation, error)
        assert causes, mutation
        for cause in causes:
            assert {"bug", "name", "hint", "checks", "op", "operand", "symptom"} <= set(cause.to_dict()), (mutation, cause)
        report = Report(file="x.py", status="graded", score=0.0, max_score=1.0, levels={}, checks=tuple(failing),
                        root_causes=causes)
        for fmt in FORMATS:
            assert render(report, fmt)


def test_a_wrong_gradient_is_named_by_its_op_and_operand(diagnosed):
    named, missed = Counter(), []
    for mutation, (_, causes, _) in diagnosed.items():
        first = causes[0]
        if first.op == mutation[0] and first.operand == "ab"[mutation[1]]:
            named[mutation[2]] += 1
        elif first.bug is None:
            missed.append((mutation, first.name))
    # The sign, a factor and dropped gradients are named wherever they show; a few mutations
    # are indistinguishable from another op's on the graphs at hand (``a - a``), or are
    # catalogued bugs of the same concept (an overwrite), which the diagnosis names first.
    assert named["sign"] >= 20 and named["factor"] >= 20 and named["doubled"] >= 18, named
    assert sum(named.values()) >= 120, (named, missed)


def test_a_sign_flip_outside_the_catalogue_reads_as_what_it_is(diagnosed):
    _, causes, _ = diagnosed[("sub", 1, "sign")]
    assert causes[0].name == "`a - b`: the gradient of `b` has the wrong sign: it is the negative of the right one"
    assert (causes[0].op, causes[0].operand, causes[0].symptom) == ("sub", "b", "sign")
    _, causes, _ = diagnosed[("pow", 0, "factor")]
    assert causes[0].symptom == "scaled" and "factor of 5/2" in causes[0].name


GROUPS = (("sign", "transposed", "at_input"), ("factor", "upstream", "unreduced"),
          ("at_output", "wrong_axis", "overwritten"), ("doubled", "dtype"))
"""Kinds graded together: one engine per group carries that group's mutations on every op at once."""


@pytest.mark.parametrize("kinds", GROUPS, ids=["+".join(g) for g in GROUPS])
def test_an_engine_with_many_wrong_rules_is_graded(kinds, launcher, tmp_path):
    assert set(sum(GROUPS, ())) == set(KINDS)
    path = tmp_path / "solution.py"
    path.write_text(rule_mutant_source(*[m for m in matrix() if m[2] in kinds]))
    report = grade(path, GradeOptions(max_examples=10, levels=("extensions",)), launcher)
    assert report.status == "graded" and report.diagnosis_error == "", (report.status, report.diagnosis_error)
    assert any(c.outcome == "failed" for c in report.checks)
    assert report.root_causes
    for fmt in FORMATS:
        assert render(report, fmt)


def test_a_mistake_replays_on_a_graph_where_only_some_steps_show_it():
    """``h = x * c; k = h * h``: only the first product broadcasts. A mul that sums a broadcast gradient without
    keepdim computes the second product right, so the graph replays, and c's gradient loses its axis."""
    import torch

    from harness.diagnosis.rule_replay import backward
    from harness.program import Leaf, Program, Step

    leaves = (Leaf("x", torch.rand(4, 3, dtype=torch.float64)), Leaf("c", torch.rand(4, 1, dtype=torch.float64)))
    program = Program(leaves, (Step("h", "mul", ("x", "c")), Step("k", "mul", ("h", "h")), Step("y", "sum", ("k",))),
                      "y")
    grads = backward(program, None, ("mul", 1, "no_keepdim", None))
    right = program.run_torch().grads
    assert grads is not None and grads["c"].shape == (4,)
    assert torch.allclose(grads["c"], right["c"].reshape(4)) and torch.allclose(grads["x"], right["x"])


@pytest.mark.parametrize("right, wrong, expected", [
    ("lambda g, s: (g * s[0].sign(),), (out,))", "lambda g, s: (g * s[0].sign(),), (self.data,))",
     ("relu", "sign_mask")),
    ("            return (g * w, g * (1 - w))\n", "            return (g * w, g * w)\n", ("maximum", "other_mask")),
    ("        invstd = (x.var(dim=0, unbiased=False) + eps).rsqrt()\n",
     "        invstd = (x.var(dim=0) + eps).rsqrt()\n", ("batch_norm", "forward_unbiased")),
    ("lambda g, s: (g * p * s[0] ** (p - 1),), (x,))", "lambda g, s: (g * p * s[0] ** p / s[0],), (x,))",
     ("pow", "output_over_input")),
    ("            spread = (g / (k * k)).unsqueeze(-1).expand(*g.shape, k * k)\n"
     "            return (_unwindows(spread, shape, k),)\n", "            return ((g / (k * k)).repeat(1, 1, k, k),)\n",
     ("avg_pool2d", "tiled", "confirmed", "tiled over the input (repeat)")),
    ("lambda g, s: (g * s[0].sign(),), (out,))", "lambda g, s: (g * s[0],), (out,))",
     ("relu", "output_as_derivative", "confirmed", "times the op's result")),
    ("            rule, saved = (lambda g, s: (g * s[1], g * s[0])), (a, b)\n",
     "            rule, saved = (lambda g, s: (g * s[1], g * s[1] * s[0])), (a, b)\n",
     ("mul", "scaled_in_place_first")),
    ("                dx = torch.nn.functional.fold(w_s.reshape(o, -1).T @ g_cols, (h, wd), (kh, kw))\n",
     "                dx = torch.nn.functional.fold(w_s.flip(2, 3).reshape(o, -1).T @ g_cols, (h, wd), (kh, kw))\n",
     ("conv2d", "unflipped_kernel", "confirmed", "not rotated by 180 degrees")),
    ("            routed = torch.zeros(*idx.shape, k * k, dtype=g.dtype).scatter_(-1, idx.unsqueeze(-1), "
     "g.unsqueeze(-1))\n",
     "            idx = (idx % k) * k + idx // k\n"
     "            routed = torch.zeros(*idx.shape, k * k, dtype=g.dtype).scatter_(-1, idx.unsqueeze(-1), "
     "g.unsqueeze(-1))\n",
     ("max_pool2d", "window_transposed", "confirmed", "row and column swapped")),
    ("            return (_unwindows(routed, (n, c, h, w), k),)\n", "            return (routed.reshape(n, c, h, w),)\n",
     ("max_pool2d", "window_layout_kept", "confirmed", "without undoing the permute")),
    ("            return (_unwindows(spread, shape, k),)\n", "            return (spread.reshape(shape),)\n",
     ("avg_pool2d", "avg_window_layout_kept", "confirmed", "without undoing the permute")),
    ('lambda g, _: (g.T,))', 'lambda g, _: (g.reshape(g.shape[::-1]),))',
     ("transpose", "reshaped_not_transposed")),
    # Passed back untransposed: the wrong shape, which a reshape before the .T turns into the right one; the
    # replay takes it through the reshape as the engine does, and the cause stays "transposed", not "reshaped".
    ('lambda g, _: (g.T,))', 'lambda g, _: (g,))', ("transpose", "transposed")),
], ids=["relu_sign_of_input", "maximum_same_mask", "batch_norm_unbiased", "pow_from_the_output", "avg_pool2d_tiled",
        "relu_times_output", "mul_upstream_scaled_in_place", "conv2d_kernel_not_flipped", "max_pool2d_window_transposed",
        "max_pool2d_window_layout_kept", "avg_pool2d_window_layout_kept", "transpose_reshaped",
        "transpose_untransposed"])
def test_classic_mistakes_of_one_op_are_named(launcher, tmp_path, right, wrong, expected):
    """relu's mask taken as sign(x); maximum's second operand routed with the first one's mask; batch_norm
    normalizing with torch.var's default (N - 1) variance; x ** p's derivative as p * y / x (nan where x is 0);
    avg_pool2d's gradient tiled with repeat instead of spread over each window; relu's gradient times its result;
    one operand of a * b computed from an upstream the other's line scaled in place; conv2d's input gradient with
    the kernel not rotated; max_pool2d's maximum decoded with row and column swapped; a pooling gradient built
    window by window and reshaped back without the inverse permute; .T's gradient reshaped instead of transposed
    back: named as such, not "in no
    simple relation". ``expected``: op and symptom, then the confidence and words of the title
    where they are held too."""
    from harness.diagnosis.mutants import reference_source

    source = reference_source()
    assert source.count(right) == 1
    path = tmp_path / "solution.py"
    path.write_text(source.replace(right, wrong))
    report = grade(path, GradeOptions(levels=("core", "followups", "extensions"), max_examples=10), launcher)
    first = report.root_causes[0]
    assert (first.op, first.symptom) == expected[:2], first.name
    if len(expected) > 2:
        op, symptom, confidence, says = expected
        assert first.confidence == confidence and says in first.name, first.name


def test_a_condition_copied_from_the_other_operand_decides_who_gets_a_gradient():
    """``if a.requires_grad`` guarding b's gradient too: a constant b gets one, a b that requires grad gets none
    when a is a constant."""
    import torch

    from harness.diagnosis.rule_replay import backward
    from harness.program import Leaf, Program, Step

    x, w = torch.rand(2, 3, dtype=torch.float64), torch.rand(3, 2, dtype=torch.float64)

    def matmul(x_grad: bool, w_grad: bool) -> Program:
        leaves = (Leaf("x", x, x_grad), Leaf("w", w, w_grad))
        return Program(leaves, (Step("h", "matmul", ("x", "w")), Step("y", "sum", ("h",))), "y")

    copied = ("matmul", 1, "other_guard", None)
    weights_only, inputs_only = backward(matmul(False, True), None, copied), backward(matmul(True, False), None, copied)
    assert weights_only["w"] is None and weights_only["x"] is None
    assert inputs_only["w"] is not None and torch.allclose(inputs_only["x"], matmul(True, False).run_torch().grads["x"])
