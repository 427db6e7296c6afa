"""How sure a root cause is, and the experiments that decided it.

Each cause is a hypothesis: a catalogued bug (its mutant replayed) or a wrong rule (torch's backward
with one rule changed). Its rivals are the other hypotheses that reproduce one of its failures. The
graphs the engine passed, and the diagnosis's experiments (``checks.experiments``), are where they
differ: each predicts pass or fail, and the engine's outcome rules the wrong ones out. A cause is
``confirmed`` when the worker saw it happen, or when it reproduces its failures and every rival is
ruled out; ``likely`` when a rival stands, when its own mutant fails a graph this engine passes (kept
only because nothing else explains the failures), when it names no simple rule, or when the engine
gives one graph different gradients from run to run (a replay then matches by chance); ``unexplained``
when nothing reproduces its failures.
"""

from __future__ import annotations

from typing import Any, Callable, Final, Mapping, Sequence

from harness.diagnosis.matching import Match, fails
from harness.diagnosis.symptoms import ENGINE, Finding, contradicted
from harness.program import Outcome, Program
from harness.report.model import CheckResult

__all__ = ["confidence", "OBSERVED"]


OBSERVED: Final = frozenset({"in_place", "not_a_tensor", "value_dtype", "swapped"})
"""Symptoms the worker saw happen (or a value shows directly): confirmed without a rival to rule out."""

PROBES_SHOWN: Final = 6


def confidence(cause: dict[str, Any], by_id: Mapping[str, CheckResult], observed: Mapping[str, list[Finding]],
                considered: Mapping[str, list[Match]], located: Mapping[str, list[Finding]],
                contradictions: Callable[[str], int], refuted: Callable[[Finding], bool],
                experiments: Sequence[Any], replays: dict, passed_graphs: Sequence[tuple[Program, Outcome]],
                ) -> tuple[str, list[dict[str, Any]]]:
    """(confidence, the probes that decided it) of one cause: see ``diagnose``."""
    checks = list(cause["checks"])
    finding = cause.get("_finding")
    seen = [c for c in checks if c in observed]
    if seen:
        ev = by_id[seen[0]].evidence
        if finding is not None and finding.symptom == "state_left_over":
            return "confirmed", [{"probe": "the same graph run first in fresh workers", "graph": ev.program.expression(),
                                  "predicted": "pass", "observed": "pass"}]
        return "confirmed", [{"probe": "seen in the worker while the graph ran", "graph": ev.program.expression(),
                              "predicted": "fail", "observed": "fail"}]
    if cause["bug"] is None and finding is None:
        return "unexplained", []
    if finding is not None and finding.symptom in OBSERVED:
        return "confirmed", []
    # The cause's rivals: every other bug or wrong rule that reproduces one of its failures.
    rivals: dict[str, Callable[[Any, Any], bool]] = {}
    for c in checks:
        for m in considered.get(c, ()):
            if m.bug != cause["bug"]:
                rivals.setdefault(f"bug {m.bug}", lambda p, e, b=m.bug: fails(b, p, e, replays))
        for f in located.get(c, ()):
            if f != finding and f.operand is not None:
                rivals.setdefault(" ".join(map(str, f.key[:3])), lambda p, e, f=f: contradicted(f, p, e))
    if cause["bug"] is not None and contradictions(cause["bug"]):
        against = next(((p, e) for p, e in passed_graphs if fails(cause["bug"], p, e, replays)), None)
        return "likely", [{"probe": "a graph this engine passes, which the bug would fail",
                           "graph": against[0].expression() if against else "", "predicted": "fail",
                           "observed": "pass", "rules_out": []}]
    if cause["bug"] is not None:
        predicts: Callable[[Any, Any], bool] = lambda p, e: fails(cause["bug"], p, e, replays)
        standing = [name for name in rivals if not (name.startswith("bug ") and contradictions(name[4:]))]
        with_graph = any(by_id[c].evidence is not None and by_id[c].evidence.observation is not None for c in checks)
    else:
        predicts = lambda p, e: contradicted(finding, p, e)
        standing = [name for name, f in _findings_by_name(located, checks, finding).items() if not refuted(f)]
        # A rule "in no simple relation", or an engine-wide pattern inferred from a replay (only the first
        # path's gradient, zeros everywhere), fits many mechanisms: never more than likely.
        with_graph = finding.symptom != "wrong_rule" and finding.op != ENGINE
    probes = []
    for e in experiments:
        if e.differs is not None:  # a failing graph run again: it tells causes apart by nothing
            continue
        if len(probes) >= PROBES_SHOWN:
            break
        try:
            mine = predicts(e.program, e.expected)
            theirs = {name: rival(e.program, e.expected) for name, rival in rivals.items()}
        except Exception:  # noqa: BLE001 -- a replay that cannot run on this graph predicts nothing
            continue
        failed = not e.passed
        if mine != failed:
            continue  # the engine fails it for another reason: it tells this cause from nothing
        out = sorted(name for name, theirs_fail in theirs.items() if theirs_fail != failed)
        if out:
            probes.append({"probe": e.name, "graph": e.program.expression(), "predicted": "fail" if mine else "pass",
                           "observed": "fail" if failed else "pass", "rules_out": out})
    standing = [n for n in standing if not any(n in probe["rules_out"] for probe in probes)]
    # One failing graph is one coincidence away from another rule: a replayed cause is confirmed only when
    # it reproduces two failures exactly (the experiments can rule rivals out, not stand in for them).
    tested = len(checks) >= 2
    if not (with_graph and tested and not standing):
        return "likely", probes
    # A replay matches values; an engine that gives the same graph different gradients run after run can
    # match a wrong replay by chance, and proves nothing by it.
    unstable = next((e for e in experiments if e.differs), None)
    if unstable is not None:
        return "likely", [*probes, {"probe": "the same failing graph, run again", "graph": unstable.program.expression(),
                                    "predicted": "the same gradients every run", "observed": "different gradients",
                                    "rules_out": []}]
    return "confirmed", probes


def _findings_by_name(located: Mapping[str, list[Finding]], checks: Sequence[str], finding: Finding
                      ) -> dict[str, Finding]:
    return {" ".join(map(str, f.key[:3])): f for c in checks for f in located.get(c, ())
            if f != finding and f.operand is not None}
