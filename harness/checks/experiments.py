"""Experiments: small graphs that tell apart the causes a grade's failures leave open.

The checks ask "is the engine right?"; the diagnosis needs "which mistake is it?". Two bugs can
fail the same check (gradients overwritten, or nodes visited in discovery order) and differ
elsewhere: a leaf used twice by one op, an intermediate reached through paths of different
depth, a tree against a diamond, a constant operand, the default seed's dtype. When a grade has
failures, these graphs run on the engine too, in the same sandbox, and each cause the diagnosis
considers is held to them: what its replay predicts (pass or fail) against what the engine did.
They score nothing and appear in the report only as the probes that decided a root cause.

A few failing graphs are also run again, several times: a replay that reproduces an engine's wrong
gradients proves something only when the engine gives the same wrong gradients every time (one that
takes its order from a set's iteration gives different ones, and may match a wrong replay by chance).
The first of them also runs as the first graph of fresh workers: an engine that gets it right there,
every time, got it wrong in the check because of what ran before it in the same process (a
module-level table, a visited set or a tape that is never cleared), not because of a rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Iterable

import torch

from harness.checks.builders import program, tensor
from harness.checks.context import CandidateError, CandidateTimeout, Context, judge
from harness.checks.observation import Observation
from harness.compare import same_values
from harness.program import Outcome, Program

__all__ = ["Experiment", "EXPERIMENTS", "run_experiments"]

_X = tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
_W = tensor([[2.0, -1.0, 0.5], [-0.5, 1.5, 3.0]])
_U = tensor([[0.5, 1.0, -2.0], [1.0, -1.0, 2.0]])
_V = tensor([[-1.0, 2.0, 1.0], [0.5, 0.5, -3.0]])


@dataclass(frozen=True)
class Experiment:
    """One discriminating graph, and what the engine did with it."""

    name: str
    """What it isolates, as a reader would say it: "a leaf used twice by one op"."""
    program: Program
    observation: Observation | None
    expected: Outcome
    passed: bool
    differs: bool | None = None
    """For a failing graph run again: whether its runs gave different gradients (None for the graphs above)."""
    fresh_for: str | None = None
    """For a failing graph run first in fresh workers: the check that failed it (``passed``: right every time)."""


def _graphs() -> list[tuple[str, frozenset[str], Program]]:
    """(name, the members it needs, graph): each isolates one way an engine's bookkeeping can go wrong."""
    leaf = {"x": (_X, True)}
    two = {"x": (_X, True), "w": (_W, True)}
    four = {"x": (_X, True), "w": (_W, True), "u": (_U, True), "v": (_V, True)}
    return [
        ("a leaf used twice by one op (x + x)", frozenset({"__add__", "sum"}),
         program(leaf, [("a", "add", ["x", "x"]), ("y", "sum", ["a"])])),
        ("a leaf used twice by one op (x * x)", frozenset({"__mul__", "sum"}),
         program(leaf, [("a", "mul", ["x", "x"]), ("y", "sum", ["a"])])),
        ("a leaf used by two different ops", frozenset({"__add__", "__mul__", "sum"}),
         program(two, [("a", "mul", ["x", "w"]), ("b", "add", ["x", "w"]), ("c", "add", ["a", "b"]),
                       ("y", "sum", ["c"])])),
        ("a tree: no value used twice", frozenset({"__add__", "__mul__", "sum"}),
         program(four, [("a", "mul", ["x", "w"]), ("b", "add", ["u", "v"]), ("c", "mul", ["a", "b"]),
                        ("y", "sum", ["c"])])),
        ("a diamond: an intermediate used by two ops", frozenset({"__add__", "__mul__", "sum"}),
         program(four, [("h", "mul", ["x", "w"]), ("a", "mul", ["h", "u"]), ("b", "add", ["h", "v"]),
                        ("c", "add", ["a", "b"]), ("y", "sum", ["c"])])),
        ("an intermediate reached through paths of different depth", frozenset({"__add__", "__mul__", "sum"}),
         program({"x": (_X, True), "w": (_W, True), "u": (_U, True)},
                 [("h", "mul", ["x", "w"]), ("g", "mul", ["h", "u"]), ("k", "mul", ["g", "u"]),
                  ("c", "add", ["k", "h"]), ("y", "sum", ["c"])])),
        ("an operand that does not require grad", frozenset({"__mul__", "sum"}),
         program({"x": (_X, True), "c": (_W, False)}, [("a", "mul", ["x", "c"]), ("y", "sum", ["a"])])),
        ("two backward passes over fresh graphs", frozenset({"__mul__", "sum"}),
         program(two, [("a", "mul", ["x", "w"]), ("y", "sum", ["a"])], passes=2)),
        ("the seed of backward(): sum alone", frozenset({"sum"}),
         program(leaf, [("y", "sum", ["x"])])),
    ]


EXPERIMENTS: Final[list[tuple[str, frozenset[str], Program]]] = _graphs()

EXPERIMENT_TIMEOUT: Final = 10.0

AGAIN: Final = 3
"""Failing graphs run again (the first ones with wrong gradients and no exception)..."""
RUNS: Final = 4
"""... this many times each: an engine whose order comes from a set differs within a few runs."""
AGAIN_STEPS: Final = 64
"""Larger failing graphs are not run again (a deep chain would cost seconds and say no more)."""
FRESH_BALLAST: Final = (0, 1_021, 5_003)
"""Fresh workers the first failing graph runs in, and the objects each allocates before it: right in each, the
engine's rules are right on it. Forks of one process allocate alike, so without ballast every fresh run would put
the graph's objects at the same addresses, and an engine whose order comes from a set of nodes would walk them in
the same (lucky) order each time."""
JUDGED: Final = ("error", "values", "requires_grad", "grads", "none")
RERUN_RTOL: Final = 1e-9
RERUN_ATOL: Final = 1e-12
"""How far two runs' gradients may differ and still be the same: rounding, never a different rule."""


def run_experiments(ctx: Context, members: frozenset[str], failing: Iterable[Any] = ()) -> list[Experiment]:
    """Every experiment the engine's members allow, and ``failing`` results' graphs run again, in one request;
    none when the engine cannot run them (an exception or a hang here is the checks' concern, which saw it
    first)."""
    failing = list(failing)
    chosen = [(name, p) for name, needs, p in EXPERIMENTS if needs <= members and "backward" in members]
    again = _run_again(failing) if "backward" in members else []
    programs = [p for _, p in chosen] + [ev.program for _, ev in again for _ in range(RUNS)]
    if not programs:
        return []
    try:
        observations = ctx.run_many(programs, timeout=EXPERIMENT_TIMEOUT)
    except (CandidateError, CandidateTimeout):
        return []
    done = []
    for (name, p), obs in zip(chosen, observations):
        expected = p.run_torch()
        verdict = judge(p, obs, expected, JUDGED)
        done.append(Experiment(name, p, obs, expected, verdict is None))
    reruns = observations[len(chosen):]
    for i, (check, ev) in enumerate(again):
        runs = reruns[i * RUNS:(i + 1) * RUNS]
        # torch's outcome is the check's own, computed when it failed
        done.append(Experiment(f"the graph of {check} run {RUNS} times", ev.program, runs[0], ev.expected, False,
                               differs=any(not _same_grads(runs[0], other) for other in runs[1:])))
    first = _first_wrong(failing) if "backward" in members else None
    if first is not None:
        done += _run_fresh(ctx, *first)
    return done


def _first_wrong(failing: Iterable[Any]) -> tuple[str, Any] | None:
    """(check id, evidence) of the first failure (in the order given: core first) whose engine gave wrong values
    or gradients without raising, on a graph small enough to run again."""
    for r in failing:
        ev = _rerunnable(r)
        if ev is not None and ev.expected is not None and judge(ev.program, ev.observation, ev.expected,
                                                                JUDGED) is not None:
            return r.id, ev
    return None


def _rerunnable(r: Any) -> Any:
    """A failing result's evidence when its engine answered without raising, on a graph small enough to run
    again; None otherwise."""
    ev = getattr(r, "evidence", None)
    obs = getattr(ev, "observation", None)
    if obs is None or obs.error is not None or len(ev.program.steps) > AGAIN_STEPS:
        return None
    return ev


def _run_fresh(ctx: Context, check: str, ev: Any) -> list[Experiment]:
    """The graph of ``check`` run as the first graph of fresh workers, at other addresses in each."""
    runs = []
    for ballast in FRESH_BALLAST:
        ctx.begin(fresh=True)
        try:
            runs.append(ctx.run(ev.program, timeout=EXPERIMENT_TIMEOUT, ballast=ballast))
        except (CandidateError, CandidateTimeout):
            return []
        if judge(ev.program, runs[-1], ev.expected, JUDGED) is not None:
            break  # wrong in a fresh worker: no later run can make the claim
    right = all(judge(ev.program, obs, ev.expected, JUDGED) is None for obs in runs)
    return [Experiment(f"the graph of {check} run first in a fresh worker", ev.program, runs[0], ev.expected, right,
                       fresh_for=check)]


def _run_again(failing: Iterable[Any]) -> list[tuple[str, Any]]:
    """(check id, its evidence: graph and torch's outcome) of a few failing results whose engine gave gradients, right or wrong: those with the
    most different ops first (an order matters only where different rules meet; ``x + x`` is the same in any
    order), then the smallest."""
    candidates = []
    for r in failing:
        ev = _rerunnable(r)
        if ev is None or not ev.observation.grads:
            continue
        candidates.append((-len({s.op for s in ev.program.steps}), len(ev.program.steps), r.id, ev))
    return [(check, ev) for _, _, check, ev in sorted(candidates, key=lambda c: c[:3])[:AGAIN]]


def _same_grads(a: Observation, b: Observation) -> bool:
    if a.error is not None or b.error is not None or a.grads.keys() != b.grads.keys():
        return (a.error is None) == (b.error is None)
    for name, got in a.grads.items():
        other = b.grads[name]
        if isinstance(got, torch.Tensor) and isinstance(other, torch.Tensor):
            # Not bit for bit: a correct engine whose order varies sums its contributions in another order.
            if not same_values(got, other, RERUN_RTOL, RERUN_ATOL):
                return False
        elif got != other:
            return False
    return True
