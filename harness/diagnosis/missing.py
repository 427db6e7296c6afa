"""Members the engine has not written yet (missing, or only stubs): the causes that come before all others.

A core check that needs a member the class lacks is not attempted; the diagnosis gathers them into
"implement `relu`: 12 core checks wait for it", or, when most of the core is still to write (an
untouched template), into one item that names every core member in the contract's order.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from harness.ops import OPS
from harness.report.model import CheckResult

__all__ = ["missing_members"]


CORE_AS_ONE = 3
"""From this many missing core members on, they are one cause: write the core (an untouched template)."""


def _member_order(member: str) -> tuple[int, str]:
    """The contract's order: the ops as the op table lists them, then backward."""
    order = [spec.member for spec in OPS.values()] + ["backward"]
    return (order.index(member) if member in order else len(order), member)


def missing_members(results: Sequence[CheckResult], points: Mapping[str, float] | None) -> list[dict[str, Any]]:
    """The core members the engine lacks (or has only as stubs), with the core checks that wait for them:
    one cause each, or one for them all when most of the core is still to write."""
    waiting: dict[str, list[str]] = {}
    stubs: set[str] = set()
    lacking: set[str] = set()
    kinds: set[str] = set()
    for r in results:
        if r.outcome == "not_attempted" and r.level == "core" and r.kind in ("missing_member", "stub") and r.reason:
            waiting.setdefault(r.reason, []).append(r.id)
            lacking |= set(r.details.get("waits_for") or ()) | {r.reason}
            if r.kind == "stub":
                stubs.add(r.reason)
            kinds.add(r.kind)
    groups = sorted(waiting.items(), key=lambda kv: -len(kv[1]))
    if len(lacking) >= CORE_AS_ONE:
        checks = sorted({c for _, ids in groups for c in ids}, key=[r.id for r in results].index)
        groups = [(sorted(lacking, key=_member_order), checks)]
    else:
        groups = [([m], ids) for m, ids in groups]
    causes = []
    for members, checks in groups:
        n = len(checks)
        named = ", ".join(f"`{m}`" for m in members)
        written = {frozenset({"stub"}): "stubs", frozenset({"missing_member"}): "missing"}.get(frozenset(kinds),
                                                                                              "missing or stubs")
        if len(members) == 1:
            name = f"implement `{members[0]}`: {n} core check{'s' if n != 1 else ''} wait{'s' if n == 1 else ''} for it"
            explanation = (f"The class has {'only a stub of' if members[0] in stubs else 'no'} `{members[0]}`, "
                           f"which the core level needs: every check that uses it is not attempted, and scores nothing.")
            hint = f"add `{members[0]}` (the README lists what each core method takes and returns)"
        else:
            name = f"implement the core: {named} ({n} core checks wait for them)"
            explanation = (f"These core members are {written}: every core check uses at least one of them, so none "
                           f"is attempted yet, and none scores.")
            hint = ("write them in this order, running `grade` after each: every check says which member it still "
                    "waits for (the README's table lists what each takes and returns)")
        causes.append({
            "bug": None, "name": name, "concept": "missing", "explanation": explanation, "hint": hint,
            "checks": [], "waiting": checks, "snippet": "", "op": None, "operand": None, "symptom": "missing_member",
            "points": 0.0, "points_waiting": round(sum((points or {}).get(c, 0.0) for c in checks), 2),
        })
    return causes
