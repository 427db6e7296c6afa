"""Which catalogued bugs reproduce a failure.

A failing check that ran a graph program keeps it as evidence: the program,
what the candidate's engine observed, and torch's outcome. The program is
replayed here, in the grader's own process, through every mutant engine
(trusted code: the candidate's never runs here). A bug matches when its mutant
reproduces what the candidate got wrong: the first wrong value or gradient
within tolerance, or the same kind of error where the candidate raised. Fit
says how much of the rest it reproduces too.

Checks that ran no program (probes, timings) are matched by the catalogue's
signatures: the check fails with a message of the bug's kind.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import torch

from harness.checks.context import Observation
from harness.compare import as_zero_d, same_values
from harness.diagnosis.catalogue import BUGS, INTEGRITY, Bug
from harness.diagnosis.mutants import MUTANTS, load_mutant
from harness.diagnosis.replay_cache import remembered
from harness.ops import OPS
from harness.program import Outcome, Program

__all__ = ["Match", "replay", "match_evidence", "match_signatures", "match_violations", "fails", "agree", "alike",
           "MAX_PATHS"]

MAX_PATHS = 20_000
"""Replays of bugs that walk every path are skipped on graphs with more paths than this."""

RTOL = 1e-5
ATOL = 1e-5
"""How closely a mutant must reproduce the candidate: float32 storage on either side still agrees,
a different bug does not."""


@dataclass(frozen=True)
class Match:
    bug: str
    fit: float
    """1.0 reproduces everything the candidate observed; less, only what it got wrong and part of the rest."""


# ---- replaying a program on a trusted engine ------------------------------------------------


def replay(program: Program, module: Any, class_name: str = "Tensor") -> Observation:
    """Run ``program`` on an engine module in this process, observed as the worker observes a submission."""
    cls = getattr(module, class_name)
    leaves: dict[str, Any] = {}
    for leaf in program.leaves:
        value = leaf.value.clone()
        leaves[leaf.name] = value if leaf.raw else cls(value, requires_grad=leaf.requires_grad)
    results: dict[str, Any] = dict(leaves)
    error = None
    started = time.perf_counter()
    try:
        for _ in range(program.passes):
            results = dict(leaves)
            for step in program.steps:
                operands = [results[a] if isinstance(a, str) else a for a in step.args]
                try:
                    results[step.name] = OPS[step.op].apply_candidate(operands, step.param_dict())
                except Exception as exc:
                    raise _Raised(f"forward: {step.name}", exc) from exc
            if program.output_requires_grad():
                out = results[program.output]
                try:
                    out.backward() if program.upstream is None else out.backward(program.upstream.clone())
                except Exception as exc:
                    raise _Raised("backward", exc) from exc
    except _Raised as raised:
        error = {"where": raised.where, "type": type(raised.exc).__name__, "message": str(raised.exc)}
    names = [s.name for s in program.steps if s.name in results]
    return Observation(
        values={n: _plain(getattr(results[n], "data", None)) for n in names},
        requires_grad={n: getattr(results[n], "requires_grad", None) for n in names},
        grads={n: _plain(getattr(t, "grad", None)) for n, t in leaves.items() if not isinstance(t, torch.Tensor)},
        leaf_data_unchanged={leaf.name: bool(torch.equal(leaves[leaf.name].data.detach(), leaf.value))
                             for leaf in program.leaves if not leaf.raw},
        error=error,
        seconds=time.perf_counter() - started,
    )


class _Raised(Exception):
    def __init__(self, where: str, exc: Exception) -> None:
        super().__init__(where)
        self.where, self.exc = where, exc


def _plain(value: Any) -> Any:
    return value.detach().to(torch.float64) if isinstance(value, torch.Tensor) and value.is_floating_point() else value


def path_count(program: Program) -> int:
    """How many times a backward that walks every path visits a node: the paths from the output to every node."""
    paths = {program.output: 1}
    for step in reversed(program.steps):
        count = paths.get(step.name, 0)
        if count:
            for arg in step.args:
                if isinstance(arg, str):
                    paths[arg] = paths.get(arg, 0) + count
    return sum(paths.values())


# ---- comparing observations ---------------------------------------------------------------


def agree(a: Any, b: Any) -> bool:
    """Whether two observed quantities are the same: None-ness, shape, values (non-finite matches non-finite)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return same_values(a, b, RTOL, ATOL)
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    if isinstance(a, dict) or isinstance(b, dict):  # something that is not a tensor: never the same as anything
        return False
    return a == b


def alike(got: Any, want: Any) -> bool:
    """Whether an observed quantity is torch's ``want`` as a check judges it: past the conventions judging forgives
    (one element in size-1 axes where torch has a 0-d tensor, which ``core.conventions`` alone charges)."""
    return agree(as_zero_d(got, want), want)


def _quantities(program: Program, obs: Observation, expected: Outcome) -> list[tuple[str, str, Any, Any]]:
    """(kind, name, candidate's, torch's) for everything the candidate observed, in the order a check reads them;
    the candidate's as judging sees it, past the conventions it forgives."""
    out: list[tuple[str, str, Any, Any]] = []
    for step in program.steps:
        if step.name in obs.values:
            want = expected.values[step.name]
            out.append(("values", step.name, as_zero_d(obs.values[step.name], want), want))
    for step in program.steps:
        if step.name in obs.requires_grad:
            out.append(("requires_grad", step.name, obs.requires_grad[step.name], expected.requires_grad[step.name]))
    for leaf in program.leaves:
        if not leaf.raw and leaf.name in obs.grads:
            want = expected.grads[leaf.name]
            out.append(("grads", leaf.name, as_zero_d(obs.grads[leaf.name], want), want))
    for name, same in obs.leaf_data_unchanged.items():
        out.append(("leaf_data_unchanged", name, same, True))
    return out


def _observed(obs: Observation, kind: str, name: str, want: Any) -> Any:
    """A mutant's quantity, seen as the candidate's is (``_quantities``): past the conventions judging forgives."""
    return as_zero_d(getattr(obs, kind).get(name), want)


# ---- matching -------------------------------------------------------------------------------


def candidate_bugs(program: Program) -> list[Bug]:
    """The bugs whose mutants can behave differently from the reference on ``program``.

    The others would only reproduce torch's answer, which a failing candidate did not give.
    """
    shape = _Shape(program)
    return [b for b in BUGS if shape.can_differ(MUTANTS[b.id]) and not (b.exponential and shape.paths > MAX_PATHS)]


DEEP = 400
"""Graph depth from which a recursive walk may exceed Python's recursion limit (1000 frames)."""


class _Shape:
    """What about a program decides which mutants can change its outcome."""

    def __init__(self, program: Program) -> None:
        self.program = program
        uses: dict[str, int] = {}
        for step in program.steps:
            for arg in step.args:
                if isinstance(arg, str):
                    uses[arg] = uses.get(arg, 0) + 1
        steps = {s.name for s in program.steps}
        self.reuse = program.passes > 1 or any(n > 1 for n in uses.values())
        self.shared = any(n > 1 for name, n in uses.items() if name in steps)
        self.constants = any(not leaf.requires_grad and not leaf.raw for leaf in program.leaves)
        self.paths = path_count(program)
        depth: dict[str, int] = {}
        for step in program.steps:
            depth[step.name] = 1 + max((depth.get(a, 0) for a in step.args if isinstance(a, str)), default=0)
        self.depth = depth.get(program.output, 0)

    def can_differ(self, mutant: Any) -> bool:
        program = self.program
        if mutant.ops is not None and not mutant.ops & program.ops_used():
            return False
        return {
            "any": True,
            "reuse": self.reuse,
            "shared": self.shared,
            "passes": program.passes > 1,
            "upstream": program.upstream is not None,
            "constants": self.constants,
            "broadcasting": "feature:broadcasting" in program.requirements(),
            "deep": self.depth >= DEEP,
            "never": False,
        }[mutant.shows_on]


def match_evidence(program: Program, obs: Observation, expected: Outcome,
                   replays: dict[tuple[int, str, int], Observation] | None = None) -> list[Match]:
    """Bugs whose mutants reproduce what the candidate got wrong on ``program``, best fit first.

    A bug written in several ways fits as well as its best way. ``replays`` caches mutant runs
    by (id of the program, bug, way) across the checks of one report.
    """
    replays = {} if replays is None else replays
    found: list[Match] = []
    if obs.error is not None:
        for b in candidate_bugs(program):
            fits = [_error_fit(obs.error, mobs.error) for mobs in _replays(program, b.id, replays)]
            if any(f is not None for f in fits):
                found.append(Match(b.id, max(f for f in fits if f is not None)))
        return _ranked(found)
    quantities = _quantities(program, obs, expected)
    wrong = [q for q in quantities if not agree(q[2], q[3])]
    right = [q for q in quantities if agree(q[2], q[3])]
    if not wrong:
        return []  # the check failed on something no replay shows (a type, a subclass)
    for b in candidate_bugs(program):
        fits = [_value_fit(mobs, wrong, right) for mobs in _replays(program, b.id, replays)]
        if any(f is not None for f in fits):
            found.append(Match(b.id, max(f for f in fits if f is not None)))
    return _ranked(found)


def _replays(program: Program, bug_id: str, replays: dict[tuple[int, str, int], Observation]) -> list[Observation]:
    """The bug's mutant run on ``program``, one observation per way of writing it."""
    out = []
    for variant in range(1 + len(MUTANTS[bug_id].variants)):
        key = (id(program), bug_id, variant)
        if key not in replays:
            replays[key] = remembered(program, ("mutant", bug_id, variant),
                                      lambda: replay(program, load_mutant(bug_id, variant)))
        out.append(replays[key])
    return out


def _error_fit(got: dict[str, Any], mutant: dict[str, Any] | None) -> float | None:
    """Same exception class, same place and a message of the same shape: a match; the same message: a perfect one.

    An exception type alone proves little (every shape error is a RuntimeError): a float32 seed
    gradient that makes ``@`` raise is not a transposed matmul rule.
    """
    if mutant is None or mutant["type"] != got.get("type") or mutant["where"] != got.get("where"):
        return None
    theirs, ours = " ".join(str(mutant["message"]).split()), " ".join(str(got.get("message")).split())
    if theirs == ours:
        return 1.0
    return 0.7 if _message_shape(theirs) == _message_shape(ours) else None


def _message_shape(message: str) -> str:
    """A message with its numbers, shapes, dtypes and quoted names blanked: what stays is its kind."""
    message = re.sub(r"'[^']*'|\"[^\"]*\"", "'_'", message)
    message = re.sub(r"\b(float|int|double|long|half|bfloat)\d*\b|\b(Float|Double|Long|Int|Half)\b", "T", message)
    return re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "N", message)


def _value_fit(mobs: Observation, wrong: list, right: list) -> float | None:
    """None unless the mutant reproduces the first wrong quantity; then how much of the rest it reproduces."""
    if mobs.error is not None:
        return None
    first_kind, first_name, first_got, first_want = wrong[0]
    if not agree(_observed(mobs, first_kind, first_name, first_want), first_got):
        return None
    w = sum(agree(_observed(mobs, kind, name, want), got) for kind, name, got, want in wrong) / len(wrong)
    r = (sum(agree(_observed(mobs, kind, name, want), got) for kind, name, got, want in right) / len(right)
         if right else 1.0)
    return round(0.7 * w + 0.3 * r, 4)


def fails(bug_id: str, program: Program, expected: Outcome,
          replays: dict[tuple[int, str, int], Observation] | None = None) -> bool:
    """Whether ``bug_id``'s mutant gets ``program`` wrong (so a candidate that gets it right lacks that bug)."""
    if bug_id not in {b.id for b in candidate_bugs(program)}:
        return False
    mobs = _replays(program, bug_id, {} if replays is None else replays)[0]
    return mobs.error is not None or any(not agree(got, want) for _, _, got, want in _quantities(program, mobs, expected))


def match_signatures(check_id: str, reason: str, passed: Iterable[str]) -> list[Match]:
    """Bugs whose signature names this check and this reason for its failure, unless a check they fail passed."""
    passed = set(passed)
    found = []
    for b in BUGS:
        if not reason or (check_id, reason) not in b.signatures:
            continue
        if any(other in passed for other, _ in b.signatures):
            continue  # the bug would also fail a check this engine passed: it is not this bug
        found.append(Match(b.id, 1.0))
    return _ranked(found)


def match_violations(violations: Sequence[str]) -> list[Match]:
    """Bugs whose signature is an integrity violation of the report."""
    found = []
    for b in BUGS:
        pattern = dict(b.signatures).get(INTEGRITY)
        if pattern is not None and any(re.search(pattern, v) for v in violations):
            found.append(Match(b.id, 1.0))
    return found


_ORDER = {b.id: i for i, b in enumerate(BUGS)}


def _ranked(found: list[Match]) -> list[Match]:
    return sorted(found, key=lambda m: (-m.fit, _ORDER[m.bug]))
