"""Property checks: random graphs compared with torch, shrunk to the smallest failure.

Each check first runs a fixed list of small programs, one per situation it
must cover (a reused leaf, a diamond, a non-square product, a broadcast
leading axis, ...: ``situations.py``), so every seed sees each of them; then hypothesis draws
programs from ``strategies.op_graphs`` over the ops a candidate has. Each
program is run in the worker and judged here against torch on values and
on the gradients torch computes (requires_grad and None-ness are other
checks' concepts). A random failure is shrunk to the smallest graph and
shown as a runnable snippet. The run is deterministic: a fixed seed, no
example database.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

# Hypothesis is thread-safe (since 6.136), so the grader's two lanes may both search.
from hypothesis import given, seed
from hypothesis.errors import Flaky, HypothesisException

from harness.checks.examples import drawn_programs, search_settings
from harness.checks.registry import check
from harness.checks.targeted import CORE_MEMBERS
from harness.checks.context import (DEFAULT_PARTS, CandidateError, CandidateTimeout, Context, Evidence, Failed,
                                    NotAttempted, Observation, Verdict, judge)
from harness.ops import OPS, ops_for_level
from harness.checks.situations import BROADCAST_SITUATIONS, CORE_SITUATIONS, Situations, situations_for
from harness.checks.snippets import reproduce
from harness.program import Program

__all__ = ["find_counterexample", "Counterexample", "used_once", "default_searches"]

EXAMPLES = {"core": 1.0, "followups": 0.3, "extensions": 0.3, "op": 0.05}
"""Share of ``--max-examples`` each property check draws."""


class _Found(Exception):
    pass


@dataclass(frozen=True)
class Counterexample:
    program: Program
    verdict: Verdict
    observation: Observation | None = None
    situation: str | None = None
    """The situation of the fixed example that failed; None for a random (shrunk) one."""


def find_counterexample(ctx: Context, strategy: Any, *, max_examples: int, seed_value: int,
                        fixed: Situations = (), key: str | None = None,
                        prepare: Callable[[Program], Program | None] | None = None) -> Counterexample | None:
    """A program the candidate gets wrong: the first failing fixed example, else the shrunk random one.

    The fixed examples run first, in order, at every seed; the random search runs only
    when they all pass, and the last failure it sees is the shrunk one. With ``key``
    (which names the strategy), the programs the search would draw are taken from
    ``examples`` and run in a few batched requests; hypothesis searches (and shrinks)
    only when one of them fails, or when a batch could not be judged. ``prepare`` rewrites each
    program (the fixed ones, the drawn ones and the search's), or drops it by returning None.
    """
    unfiltered = strategy  # the shipped draws are keyed by the strategy itself
    if prepare is not None:
        fixed = [(situation, p) for situation, p in ((s, prepare(program)) for s, program in fixed) if p is not None]
        strategy = strategy.map(prepare).filter(lambda p: p is not None)
    if fixed:
        batch = _first_failure(ctx, [program for _, program in fixed])
        if batch is _UNKNOWN:
            for situation, program in fixed:
                verdict, observation = _verdict(ctx, program)
                if verdict is not None:
                    return Counterexample(program, verdict, observation, situation)
        elif batch is not _PASSED:
            index, verdict, observation = batch
            return Counterexample(fixed[index][1], verdict, observation, fixed[index][0])
    unshrunk: Counterexample | None = None
    if key is not None:
        programs = drawn_programs(key, unfiltered, max_examples, seed_value)
        if prepare is not None:
            programs = tuple(p for p in map(prepare, programs) if p is not None)
        batch = _first_failure(ctx, programs)
        if batch is _PASSED:
            return None
        if batch is not _UNKNOWN:
            index, verdict, observation = batch
            unshrunk = Counterexample(programs[index], verdict, observation)
    last: dict[str, Counterexample] = {}
    # After a timeout every further example would wait out its own limit: the search
    # stops, and the example that hung is the one reported (unshrunk).
    stopped: list[bool] = []

    @search_settings(max_examples)
    @seed(seed_value)
    @given(strategy)
    def prop(program: Program) -> None:
        if stopped:
            return
        verdict, observation = _verdict(ctx, program)
        if verdict is not None:
            last["found"] = Counterexample(program, verdict, observation)
            if verdict.kind == "timeout":
                stopped.append(True)
            raise _Found()

    try:
        prop()
    except (_Found, Flaky):
        pass
    except HypothesisException:
        if "found" not in last and unshrunk is None:
            raise
    # The search draws what the batch ran, so it finds the same failure and shrinks it;
    # should it not (another hypothesis drawing otherwise), the batch's failure stands as found.
    return last.get("found") or unshrunk


_PASSED, _UNKNOWN = object(), object()
_BATCH = 40
"""Programs per batched request: replies stay far below the channel's limits."""


def _first_failure(ctx: Context, programs: Sequence[Program]) -> Any:
    """The first of ``programs`` the candidate gets wrong as (index, verdict, observation); ``_PASSED`` when
    none; ``_UNKNOWN`` when a batch itself failed (it hung or the worker died), which one-by-one runs must settle."""
    for start in range(0, len(programs), _BATCH):
        chunk = programs[start:start + _BATCH]
        try:
            observations = ctx.run_many(chunk, timeout=5.0 + 0.1 * len(chunk))
        except (CandidateTimeout, CandidateError):
            return _UNKNOWN
        for offset, (program, observation) in enumerate(zip(chunk, observations)):
            verdict = judge(program, observation, program.run_torch(), DEFAULT_PARTS)
            if verdict is not None:
                return start + offset, verdict, observation
    return _PASSED


def _verdict(ctx: Context, program: Program) -> tuple[Verdict | None, Observation | None]:
    try:
        obs = ctx.run(program, timeout=5.0)
    except CandidateTimeout as exc:
        return Verdict("timeout", exc.message), None
    except CandidateError as exc:
        return Verdict("error", exc.message), None
    return judge(program, obs, program.run_torch(), DEFAULT_PARTS), obs


def _raise(ctx: Context, found: Counterexample | None, what: str) -> None:
    if found is None:
        return
    program, verdict = found.program, found.verdict
    details: dict[str, Any] = {"graph": program.expression(),
                               "snippet": reproduce(program, ctx.path, ctx.class_name, observed=found.observation)}
    if verdict.mismatch is not None:
        details["worst"] = verdict.mismatch.to_dict()
    what = f"failing graph ({found.situation})" if found.situation else "smallest failing graph"
    message = f"{what}: {program.expression()} -> {verdict.message}"
    evidence = Evidence(program, found.observation, program.run_torch(), hung=verdict.kind == "timeout")
    if verdict.kind in ("error", "timeout"):
        raise CandidateError(message, **details).with_evidence(evidence)
    raise Failed(message, **details).with_evidence(evidence)


def _search(ctx: Context, ops: Sequence[str], share: str, fixed: Situations = (),
            prepare: Callable[[Program], Program | None] | None = None, **strategy_options: Any) -> None:
    from harness.checks.strategies import op_graphs

    found = find_counterexample(ctx, op_graphs(ops=list(ops), **strategy_options),
                                max_examples=_examples(ctx.max_examples, share), seed_value=ctx.seed,
                                fixed=fixed, key=_strategy_key(ops, strategy_options), prepare=prepare)
    _raise(ctx, found, share)


def _examples(max_examples: int, share: str) -> int:
    return round(max_examples * EXAMPLES[share])


def _strategy_key(ops: Sequence[str], options: dict[str, Any]) -> str:
    return "op_graphs " + json.dumps({"ops": list(ops), **options}, sort_keys=True)


_CORE_OPS = [spec.name for spec in ops_for_level("core")]


@check("core.properties", "core", "properties", requires=CORE_MEMBERS, timeout=120.0, cost=3.0)
def random_core_graphs(ctx: Context) -> None:
    """Random graphs of + * @ relu sum (reuse, diamonds, zeros, ties) match torch.

    Shrunk to the smallest graph that breaks: run the snippet and compare with torch step by step.
    """
    _search(ctx, _CORE_OPS, "core", CORE_SITUATIONS, integer_values=True)


@check("followups.properties", "followups", "broadcasting", requires=CORE_MEMBERS | {"feature:broadcasting"},
       timeout=120.0, cost=1.0)
def random_broadcast_graphs(ctx: Context) -> None:
    """Random graphs with broadcast operands match torch.

    Every operand's gradient must be summed back to that operand's own shape.
    """
    _search(ctx, _CORE_OPS, "followups", BROADCAST_SITUATIONS, integer_values=True, broadcasting=True)


@check("extensions.properties", "extensions", "properties", requires=CORE_MEMBERS, timeout=120.0, cost=1.0)
def random_extension_graphs(ctx: Context) -> None:
    """Random graphs over every extension op the engine has match torch.

    Each extension op must also compose with the others and with reuse.
    """
    present = [name for name, spec in OPS.items() if spec.level == "extensions" and spec.member in ctx.members]
    if not present:
        raise NotAttempted(f"{ctx.class_name} has none of the extension ops", reason="extension ops")
    _search(ctx, _CORE_OPS + present, "extensions", situations_for(present), integer_values=False)


def _op_check(name: str) -> None:
    spec = OPS[name]

    def run(ctx: Context) -> None:
        _search(ctx, [name, "mul", "sum"], "op", situations_for([name]), prepare=used_once,
                integer_values=not spec.transcendental, focus=name)

    run.__doc__ = f"{name} matches torch in value and gradient on random graphs.\n\n{spec.doc}"
    check(f"extensions.op.{name}", "extensions", spec.concept, requires=CORE_MEMBERS | {spec.member},
          timeout=60.0, cost=0.2, isolated=False)(run)


for _name, _spec in OPS.items():
    if _spec.level == "extensions":
        _op_check(_name)


def used_once(program: Program) -> Program | None:
    """``program`` for an op check: None when a value feeds two ops, and without a final sum of a 0-d value.

    An op check judges its op: a graph that reuses a value also judges accumulation, and
    the sum of a 0-d tensor judges sum's conventions; those are other checks' concern.
    """
    if program.passes != 1:
        return None
    seen: set[str] = set()
    for step in program.steps:
        for arg in step.args:
            if isinstance(arg, str):
                if arg in seen:
                    return None
                seen.add(arg)
    last = program.steps[-1] if program.steps else None
    if last is not None and last.op == "sum" and len(program.steps) > 1 and isinstance(last.args[0], str):
        program.validate()  # keeps every value it checked
        value = program.__dict__.get("_checked_values", {}).get(last.args[0])
        if value is not None and value.dim() == 0 and program.upstream is None:
            return dataclasses.replace(program, steps=program.steps[:-1], output=last.args[0])
    return program


def default_searches(max_examples: int = 200, seed_value: int = 0) -> list[tuple[str, Any, int, int]]:
    """Every random search a grade with these settings runs on an engine with every op: (key, strategy
    factory, examples, seed), for ``examples`` to draw ahead of time and ship."""
    from harness.checks.strategies import op_graphs

    every_extension = [name for name, spec in OPS.items() if spec.level == "extensions"]
    searches: list[tuple[Sequence[str], str, dict[str, Any]]] = [
        (_CORE_OPS, "core", {"integer_values": True}),
        (_CORE_OPS, "followups", {"integer_values": True, "broadcasting": True}),
        (_CORE_OPS + every_extension, "extensions", {"integer_values": False}),
    ]
    searches += [([name, "mul", "sum"], "op", {"integer_values": not OPS[name].transcendental, "focus": name})
                 for name in every_extension]
    return [(_strategy_key(ops, options), functools.partial(op_graphs, ops=list(ops), **options),
             _examples(max_examples, share), seed_value) for ops, share, options in searches]
