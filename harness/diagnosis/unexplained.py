"""Failures no catalogued bug explains: named by the wrong rule that reproduces them, or grouped by what went wrong.

A failure whose gradients one rule mutation reproduces is named by it (op, operand, symptom). The
rest are grouped by the op nearest to what went wrong and titled by it ("wrong gradients around
x0 + x1"), except one exception met around several ops, which is one cause titled by the exception.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

from harness.concepts import with_explain_line
from harness.diagnosis.matching import alike
from harness.diagnosis.symptoms import Finding, cover, describe, operand_name, where_it_differs
from harness.ops import OPS
from harness.report.model import CheckResult
from harness.report.safety import one_line
from harness.terminal import clip

__all__ = ["unexplained", "lone_op", "first_line", "size"]


def size(program: Any) -> tuple[int, int]:
    return len(program.steps), sum(leaf.value.numel() for leaf in program.leaves)


# ---- failures no catalogued bug explains ---------------------------------------------------


def unexplained(results: Sequence[CheckResult], locate: Callable[[CheckResult], list[Finding]]
                 ) -> list[dict[str, Any]]:
    """Failures with a graph but no matching bug, grouped by what is wrong in each.

    A failure whose gradients one rule mutation reproduces is named by it: op, operand and
    symptom (``symptoms``). The rest are grouped by the op nearest to what went wrong, and
    the group names no bug.
    """
    found: dict[str, list[Finding]] = {}
    groups: dict[str, list[CheckResult]] = {}
    by_id = {r.id: r for r in results}
    for r in results:
        ev = r.evidence
        if ev is None:
            continue
        findings = locate(r) or lone_op(ev.program, ev.observation, ev.expected)
        if findings:
            found[r.id] = findings
            continue
        op = _blamed_op(ev.program, ev.observation, ev.expected)
        if op is not None:
            groups.setdefault((op, _failed_how(r)), []).append(r)
    named = {key: [(by_id[c], finding) for c in checks] for key, (finding, checks) in cover(found).items()}
    # One op and operand named in several ways, one of them "wrong in no simple way": a single cause,
    # named as most of its graphs show it (the vague name when as many show each).
    # So is one op's wrong forward value, whose detail (where it differs) each graph measures anew.
    for key in [k for k in named if k[2] in ("wrong_rule", "wrong_value")]:
        if key not in named:
            continue  # merged already
        same = [k for k in named if k[:2] == key[:2]] if key[2] == "wrong_rule" else \
            [k for k in named if k[:3] == key[:3]]
        winner = max(same, key=lambda k: (len(named[k]), k == key))
        finding = named[winner][0][1]
        for other in same:
            if other != winner:
                named[winner] += [(r, finding) for r, _ in named.pop(other)]
    causes = []
    for members_found in named.values():
        members = [r for r, _ in members_found]
        finding = members_found[0][1]
        smallest = min(members, key=lambda r: size(r.evidence.program))
        step = next((s for s in smallest.evidence.program.steps if s.op == finding.op), None)
        name, hint, concept = describe(finding, step.param_dict() if step is not None else None)
        causes.append({
            "bug": None, "name": name, "concept": concept,
            "explanation": (f"No catalogued bug, but one wrong rule reproduces every gradient of these failures: "
                            f"{name.split(': ', 1)[-1]}. The smallest failing graph is "
                            f"{smallest.evidence.program.summary()}, where {first_line(smallest.message)}"),
            "hint": hint, "checks": [r.id for r in members],
            "snippet": smallest.details.get("snippet", ""),
            "_finding": finding,
            "_observed": [(r.evidence.program, r.evidence.observation, r.evidence.expected) for r in members],
            "op": finding.op, "operand": operand_name(finding.op, finding.operand) if finding.operand is not None
            else None, "symptom": finding.symptom, "level": OPS[finding.op].level if finding.op in OPS else None,
        })
    causes += _one_per_exception(groups)
    for (op, how), members in groups.items():
        smallest = min(members, key=lambda r: size(r.evidence.program))
        step = next((s for s in smallest.evidence.program.steps if s.op == op), None)
        names = [f"x{i}" for i in range(len(OPS[op].slots))] if op in OPS else []
        syntax = OPS[op].render(names, step.param_dict() if step is not None else None) if op in OPS else op
        # Titled by what went wrong, not by the checks' concept: one wrong gradient fails checks of
        # timing, memory and broadcasting alike, and their own hints are about something else.
        concept = OPS[op].concept if how in _UNNAMED and op in OPS else smallest.concept
        title, hint = _UNNAMED.get(how, ("{concept} failures around {syntax}", ""))
        name = title.format(concept=smallest.concept, syntax=syntax)
        if how == "error":
            name = _raised(smallest, syntax) or name
        causes.append({
            "bug": None,
            "name": name,
            "concept": concept,
            "explanation": (f"No catalogued bug reproduces these failures. The op nearest to what goes wrong "
                            f"is {syntax}; the smallest failing graph is {smallest.evidence.program.summary()}, "
                            f"where {first_line(smallest.message)}"),
            "hint": with_explain_line(hint.format(syntax=syntax), concept) if hint else smallest.details.get("hint", ""),
            "checks": [r.id for r in members],
            "snippet": smallest.details.get("snippet", ""),
            "op": op, "operand": None, "symptom": None, "level": OPS[op].level if op in OPS else None,
            "_graph": (smallest.evidence.program, smallest.evidence.expected),
        })
    return causes


def _one_per_exception(groups: dict[tuple[str, str], list[CheckResult]]) -> list[dict[str, Any]]:
    """One cause for one exception: the same exception (type, place and message, numbers and names aside) met
    around several ops is one mechanism, titled by the exception rather than by each op it surfaced near.
    The groups it takes are removed from ``groups``."""
    by_exception: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    for key, members in groups.items():
        if key[1] == "error":
            for signature in {_exception(r) for r in members} - {None}:
                by_exception.setdefault(signature, []).append(key)
    causes = []
    for (kind, phase, _), keys in by_exception.items():
        ops = sorted({op for op, _ in keys if any(k in groups for k in keys)})
        if len(ops) < 2 or not all(k in groups for k in keys):
            continue
        members = [r for k in keys for r in groups.pop(k)]
        smallest = min(members, key=lambda r: size(r.evidence.program))
        error = smallest.evidence.observation.error if smallest.evidence.observation is not None else {}
        said = first_line(str(error.get("message", "")))[:100]
        around = ", ".join(_op_syntax(op) for op in ops[:3]) + (f" and {len(ops) - 3} more" if len(ops) > 3 else "")
        causes.append({
            "bug": None, "name": f"{phase} raises {kind}: {said} (around {around})",
            "concept": smallest.concept,
            "explanation": (f"One exception, met on {len(members)} failing graphs around {len(ops)} different ops: "
                            f"the op it surfaced near is not its cause. The smallest failing graph is "
                            f"{smallest.evidence.program.summary()}."),
            "hint": with_explain_line("run the reproduction below: the exception and the line it names are where "
                                      "to start, and the same line breaks every graph listed.", smallest.concept),
            "checks": [r.id for r in members], "snippet": smallest.details.get("snippet", ""),
            "op": None, "operand": None, "symptom": None, "level": smallest.level,
            "_graph": (smallest.evidence.program, smallest.evidence.expected),
        })
    return causes


def _raised(r: CheckResult, syntax: str) -> str | None:
    """What raised, named by the exception and the submission's line that raised it: ``x0.conv2d(x1): backward
    raises RuntimeError: shape '[2, 3]' is invalid for input of size 12 (line 127: gw = g.squeeze(0) ...)``."""
    obs = r.evidence.observation if r.evidence is not None else None
    error = obs.error if obs is not None else None
    if not error or not error.get("type"):
        return None
    said = one_line(first_line(str(error.get("message", ""))))
    text = f"{syntax}: {_phase(error)} raises {one_line(str(error['type']))}" + (f": {clip(said, 90)}" if said else "")
    if error.get("line"):
        source = error.get("source_line")
        text += f" (line {error['line']}" + (f": {clip(one_line(str(source)).strip(), 70)})" if source else ")")
    return text


def _phase(error: dict[str, Any]) -> str:
    return "backward" if error.get("where") == "backward" else "forward"


def _exception(r: CheckResult) -> tuple[str, str, str] | None:
    """(type, forward or backward, the message with its numbers and quoted names left out) of a failure's error."""
    obs = r.evidence.observation if r.evidence is not None else None
    error = obs.error if obs is not None else None
    if not error:
        return None
    phase = _phase(error)
    message = re.sub(r"'[^']*'|\"[^\"]*\"|\d+(\.\d+)?", "_", first_line(str(error.get("message", ""))))
    return str(error.get("type", "")), phase, message


def _op_syntax(op: str) -> str:
    return OPS[op].render([f"x{i}" for i in range(len(OPS[op].slots))]) if op in OPS else op


_UNNAMED: dict[str, tuple[str, str]] = {
    "hang": ("no answer in time on graphs around {syntax}",
             "the engine ran past the time limit on the graph below: look for a loop that never ends (a node "
             "visited again and again, a while loop whose condition never changes)."),
    "error": ("exceptions around {syntax}",
              "run the reproduction below: the exception and the line it names are where to start."),
    "gradient": ("wrong gradients around {syntax}",
                 "the gradients that flow back through {syntax} differ from torch's in a way no single wrong rule "
                 "reproduces: work its derivative out again and follow one gradient through the graph below."),
    "value": ("wrong forward values around {syntax}",
              "the forward pass computes a wrong value near {syntax}: check its formula on the graph below."),
}
"""Title and hint of a group no cause explains, by what went wrong (others: the checks' concept and hint)."""


def _failed_how(r: CheckResult) -> str:
    """What went wrong in a failure with a graph: a hang, an exception, a wrong value or gradient, or else."""
    ev = r.evidence
    if r.outcome == "timeout" or ev.hung:
        return "hang"  # a property check reports a hang on its graph as an error
    if ev.observation is None and r.outcome == "error" or ev.observation is not None and ev.observation.error:
        return "error"
    if ev.observation is None or ev.expected is None:
        return "other"
    obs, expected = ev.observation, ev.expected
    if any(not alike(obs.values[s.name], expected.values[s.name]) for s in ev.program.steps if s.name in obs.values):
        return "value"
    if any(not alike(obs.grads[n], expected.grads.get(n)) for n in obs.grads if expected.grads.get(n) is not None):
        return "gradient"
    return "other"


def lone_op(program: Any, obs: Any, expected: Any) -> list[Finding]:
    """An op alone on its leaves (but for a final sum or a weight) whose gradient is wrong in no simple way."""
    if obs is None or expected is None or obs.error is not None or len(program.steps) > 3:
        return []
    main = [s for s in program.steps if not (s.op == "sum" and s.name == program.output)
            and not (s.op == "mul" and s is not program.steps[0])]
    if len(main) != 1:
        return []
    step = main[0]
    if any(step.name in obs.values and not alike(obs.values[step.name], expected.values[step.name])
           for step in program.steps):
        return []
    for slot, arg in enumerate(step.args):
        if isinstance(arg, str) and arg in obs.grads and expected.grads.get(arg) is not None \
                and not alike(obs.grads.get(arg), expected.grads[arg]):
            return [Finding(step.op, slot, "wrong_rule", where_it_differs(obs.grads[arg], expected.grads[arg]))]
    return []


def first_line(message: str) -> str:
    line = message.splitlines()[0] if message else "it fails"
    return line.removeprefix("smallest failing graph: ").split(" -> ", 1)[-1]


def _blamed_op(program: Any, obs: Any, expected: Any) -> str | None:
    """The op nearest the first thing that went wrong: the first wrong step, else the first consumer of
    the first leaf with a wrong gradient (sum and + only when nothing else consumes it)."""
    if obs is not None and expected is not None and obs.error is None:
        for step in program.steps:
            if step.name in obs.values and not alike(obs.values[step.name], expected.values[step.name]):
                return step.op
        for leaf in program.leaves:
            if leaf.name in obs.grads and not alike(obs.grads[leaf.name], expected.grads.get(leaf.name)):
                consumers = [s.op for s in program.steps if leaf.name in s.args]
                plain = [op for op in consumers if op not in ("sum", "add")]
                return (plain or consumers or [None])[0]
    if obs is not None and obs.error is not None:
        where = str(obs.error.get("where", ""))
        if where.startswith("forward: "):
            name = where.removeprefix("forward: ")
            return next((s.op for s in program.steps if s.name == name), None)
    ops = [s.op for s in program.steps]
    plain = [op for op in ops if op not in ("sum", "add")]
    return (plain or ops or [None])[0]
