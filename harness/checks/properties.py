"""Property checks: random graphs compared with torch, shrunk to the smallest failure.

Hypothesis draws programs from ``strategies.op_graphs`` over the ops a
candidate has; each is run in the worker and judged here against torch. A
failure is shrunk to the smallest graph and shown as a runnable snippet.
The run is deterministic: a fixed seed, no example database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

# Hypothesis is thread-safe (since 6.136), so the grader's two lanes may both search.
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis.errors import Flaky, HypothesisException

from harness.checks.targeted import CORE_MEMBERS, check
from harness.checks.context import (CandidateError, CandidateTimeout, Context, Evidence, Failed, NotAttempted, Observation,
                                    Verdict, judge)
from harness.ops import OPS, ops_for_level
from harness.program import Program

__all__ = ["find_counterexample", "Counterexample"]

EXAMPLES = {"core": 1.0, "followups": 0.3, "extensions": 0.3, "op": 0.05}
"""Share of ``--max-examples`` each property check draws."""


class _Found(Exception):
    pass


@dataclass(frozen=True)
class Counterexample:
    program: Program
    verdict: Verdict
    observation: Observation | None = None


def find_counterexample(ctx: Context, strategy: Any, *, max_examples: int, seed_value: int) -> Counterexample | None:
    """Search for a program the candidate gets wrong; the last failure seen is the shrunk one."""
    last: dict[str, Counterexample] = {}
    # After a timeout every further example would wait out its own limit: the search
    # stops, and the example that hung is the one reported (unshrunk).
    stopped: list[bool] = []

    @settings(max_examples=max(1, max_examples), database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False, verbosity=Verbosity.quiet,
              phases=(Phase.generate, Phase.shrink), print_blob=False)
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
        if "found" not in last:
            raise
    return last.get("found")


def _verdict(ctx: Context, program: Program) -> tuple[Verdict | None, Observation | None]:
    try:
        obs = ctx.run(program, timeout=5.0)
    except CandidateTimeout as exc:
        return Verdict("timeout", exc.message), None
    except CandidateError as exc:
        return Verdict("error", exc.message), None
    return judge(program, obs, program.run_torch(), ("error", "values", "requires_grad", "grads")), obs


def _raise(ctx: Context, found: Counterexample | None, what: str) -> None:
    if found is None:
        return
    program, verdict = found.program, found.verdict
    details: dict[str, Any] = {"graph": program.expression(), "snippet": program.snippet(ctx.module_name,
                                                                                        ctx.class_name)}
    if verdict.mismatch is not None:
        details["worst"] = verdict.mismatch.to_dict()
    message = f"smallest failing graph: {program.expression()} -> {verdict.message}"
    evidence = Evidence(program, found.observation, program.run_torch())
    if verdict.kind in ("error", "timeout"):
        raise CandidateError(message, **details).with_evidence(evidence)
    raise Failed(message, **details).with_evidence(evidence)


def _search(ctx: Context, ops: Sequence[str], share: str, **strategy_options: Any) -> None:
    from harness.checks.strategies import op_graphs

    found = find_counterexample(ctx, op_graphs(ops=list(ops), **strategy_options),
                                max_examples=round(ctx.max_examples * EXAMPLES[share]), seed_value=ctx.seed)
    _raise(ctx, found, share)


_CORE_OPS = [spec.name for spec in ops_for_level("core")]


@check("core.properties", "core", "properties", requires=CORE_MEMBERS, timeout=120.0, cost=3.0)
def random_core_graphs(ctx: Context) -> None:
    """Random graphs of + * @ relu sum (reuse, diamonds, zeros, ties) match torch.

    Shrunk to the smallest graph that breaks: run the snippet and compare with torch step by step.
    """
    _search(ctx, _CORE_OPS, "core", integer_values=True)


@check("followups.properties", "followups", "broadcasting", requires=CORE_MEMBERS | {"feature:broadcasting"},
       timeout=120.0, cost=1.0)
def random_broadcast_graphs(ctx: Context) -> None:
    """Random graphs with broadcast operands match torch.

    Every operand's gradient must be summed back to that operand's own shape.
    """
    _search(ctx, _CORE_OPS, "followups", integer_values=True, broadcasting=True)


@check("extensions.properties", "extensions", "properties", requires=CORE_MEMBERS, timeout=120.0, cost=1.0)
def random_extension_graphs(ctx: Context) -> None:
    """Random graphs over every extension op the engine has match torch.

    Each extension op must also compose with the others and with reuse.
    """
    present = [name for name, spec in OPS.items() if spec.level == "extensions" and spec.member in ctx.members]
    if not present:
        raise NotAttempted(f"{ctx.class_name} has none of the extension ops")
    _search(ctx, _CORE_OPS + present, "extensions", integer_values=False)


def _op_check(name: str) -> None:
    spec = OPS[name]

    def run(ctx: Context) -> None:
        _search(ctx, [name, "mul", "sum"], "op", integer_values=not spec.transcendental)

    run.__doc__ = f"{name} matches torch in value and gradient on random graphs.\n\n{spec.doc}"
    check(f"extensions.op.{name}", "extensions", spec.concept, requires=CORE_MEMBERS | {spec.member},
          timeout=60.0, cost=0.2)(run)


for _name, _spec in OPS.items():
    if _spec.level == "extensions":
        _op_check(_name)
