"""Ties in maximum and max_pool2d: every valid convention passes, the full gradient to every tied element does not.

At a tie the gradient is a convention: torch splits it (maximum) or gives it to the first maximum
(max_pool2d); any one tied element, or an even split, is as valid. Giving all of it to each
counts it twice. These checks judge the tied elements' shares together and the rest against torch.
"""

from __future__ import annotations

import math

import torch

from harness.checks.builders import program as _program, tensor as _t
from harness.checks.context import CandidateError, Context, Evidence, Failed, describe_error, judge
from harness.checks.registry import check
from harness.checks.snippets import reproduce
from harness.checks.targeted import CORE_MEMBERS
from harness.program import Program, Step

__all__ = ["maximum_ties", "max_pool_ties"]


def _tied_groups_maximum(a: torch.Tensor, b: torch.Tensor) -> list[list[tuple[str, int]]]:
    return [[("a", i), ("b", i)] for i in range(a.numel()) if a.reshape(-1)[i] == b.reshape(-1)[i]]


def _tied_groups_pool(x: torch.Tensor, k: int) -> list[list[tuple[str, int]]]:
    n, c, h, w = x.shape
    flat = torch.arange(x.numel()).reshape(x.shape)
    groups = []
    for i in range(0, h, k):
        for j in range(0, w, k):
            window, where = x[0, 0, i:i + k, j:j + k].reshape(-1), flat[0, 0, i:i + k, j:j + k].reshape(-1)
            top = window == window.max()
            if int(top.sum()) > 1:
                groups.append([("x", int(p)) for p in where[top]])
    return groups


def _judge_ties(ctx: Context, program: Program, groups: list[list[tuple[str, int]]]) -> None:
    """Outside the tied elements the gradient is torch's; a tie's elements share its gradient in any proportion
    (all to one of them, split evenly) but together receive it exactly once."""
    expected = program.run_torch()
    obs = ctx.run(program)
    if obs.error is not None:
        raise CandidateError(describe_error(obs.error), graph=program.expression()).with_evidence(
            Evidence(program, obs, expected))
    tied = {(leaf, i) for group in groups for leaf, i in group}
    problem = None
    verdict = judge(program, obs, expected, ("values",))
    if verdict is not None:
        problem = verdict.message
    for leaf in (leaf for leaf in program.leaves if leaf.requires_grad and problem is None):
        got, want = obs.grads.get(leaf.name), expected.grads[leaf.name]
        if not isinstance(got, torch.Tensor) or got.numel() != want.numel():
            problem = judge(program, obs, expected, ("grads",)).message if judge(
                program, obs, expected, ("grads",)) else f"{leaf.name}.grad is missing"
            break
        g, w = got.reshape(-1).to(torch.float64), want.reshape(-1)
        for i in range(w.numel()):
            if (leaf.name, i) not in tied and not math.isclose(float(g[i]), float(w[i]), rel_tol=1e-6, abs_tol=1e-9):
                problem = f"{leaf.name}.grad at flat index {i} is {float(g[i]):g}, expected {float(w[i]):g}"
                break
    reason = "wrong_gradient"
    if problem is None:
        for group in groups:
            got = {(leaf, i): float(obs.grads[leaf].reshape(-1)[i]) for leaf, i in group}
            total = sum(float(expected.grads[leaf].reshape(-1)[i]) for leaf, i in group)
            shares = sum(got.values())
            places = ", ".join(f"{leaf}[{i}]" for leaf, i in group)
            if not math.isclose(shares, total, rel_tol=1e-6, abs_tol=1e-9) or min(got.values()) < -1e-9:
                many = " (the full gradient to every tied element)" if math.isclose(
                    shares, total * len(group), rel_tol=1e-6) else ""
                problem = (f"the tied elements {places} received {', '.join(f'{v:g}' for v in got.values())}, "
                           f"{shares:g} in all, where their gradient is {total:g}{many}: give it to one of them or "
                           "split it, exactly once")
                reason = "tied_all" if many else "tie_shares"
                break
    if problem is not None:
        raise Failed(problem, reason=reason, graph=program.expression(),
                     snippet=reproduce(program, ctx.path, ctx.class_name)).with_evidence(
            Evidence(program, obs, expected))


@check("extensions.ties.maximum", "extensions", "routing", requires=CORE_MEMBERS | {"maximum"}, isolated=False)
def maximum_ties(ctx: Context) -> None:
    """maximum at a tie: the gradient goes to one side or is split, exactly once.

    At a tie either operand may take the gradient, or both half of it (torch splits it); both taking all of it
    counts it twice.
    """
    a, b = _t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), _t([[1.0, 0.0, 3.0], [5.0, 5.0, 2.0]])
    v = _t([[1.0, 1.5, 2.0], [2.5, 3.0, 3.5]])
    p = _program({"a": (a, True), "b": (b, True), "v": (v, False)},
                 [("z", "maximum", ["a", "b"]), ("w", "mul", ["z", "v"]), ("y", "sum", ["w"])])
    _judge_ties(ctx, p, _tied_groups_maximum(a, b))


@check("extensions.ties.max_pool2d", "extensions", "routing", requires=CORE_MEMBERS | {"max_pool2d"}, isolated=False)
def max_pool_ties(ctx: Context) -> None:
    """max_pool2d with a tied maximum: the window's gradient goes to one of them or is split, exactly once.

    Torch gives it to the first maximum; any one of them, or an even split, is as valid; every tied element
    taking all of it is not.
    """
    x = _t([[[[1.0, 3.0, 2.0, 5.0], [3.0, 0.0, 4.0, 1.0], [7.0, 7.0, 0.0, -1.0], [7.0, 7.0, 6.0, 2.0]]]])
    v = _t([[[[1.0, 1.5], [2.0, 2.5]]]])
    p = _program({"x": (x, True), "v": (v, False)},
                 [("z", "max_pool2d", ["x"]), ("w", "mul", ["z", "v"]), ("y", "sum", ["w"])])
    p = Program(p.leaves, (Step("z", "max_pool2d", ("x",), (("k", 2),)), *p.steps[1:]), p.output)
    _judge_ties(ctx, p, _tied_groups_pool(x, 2))
