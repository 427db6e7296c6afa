"""What the worker saw happen while a failing graph ran: facts that name their cause without a replay.

An op that wrote into its operand (the worker compares each step's operands before and after it
runs), an op that returned no tensor, results whose ``requires_grad`` was already wrong when
backward raised, a float32 result or gradient where everything was float64. Each is a finding
about one op (or the engine as a whole), confirmed by what was seen rather than inferred.
"""

from __future__ import annotations

import re
from typing import Any, Final

from harness.diagnosis.rule_replay import close, graded_leaves
from harness.diagnosis.symptoms import ENGINE, Finding
from harness.program import Outcome, Program

__all__ = ["observed_facts"]


_DTYPE_CLASH: Final = re.compile(r"dtype|scalar type|Double|Float(?!ing)|float32|float64", re.I)
"""How torch words an op between float32 and float64 tensors (a matmul, an in-place add) in an exception."""


def observed_facts(program: Program, got: Any, expected: Outcome) -> list[Finding]:
    """What the worker saw happen, which needs no replay: an op that wrote into its operand, an op that returned
    no tensor, results whose requires_grad is wrong before backward raised, float32 gradients of float64 data."""
    for change in got.raw.get("mutated") or ():
        step = next((s for s in program.steps if s.name == change.get("step")), None)
        if step is not None and isinstance(change.get("slot"), int) and change["slot"] < len(step.args):
            return [Finding(step.op, change["slot"], "in_place")]
    error = got.error or {}
    if error.get("returned") and str(error.get("where", "")).startswith("forward: "):
        name = str(error["where"]).removeprefix("forward: ")
        step = next((s for s in program.steps if s.name == name), None)
        if step is not None:
            return [Finding(step.op, None, "not_a_tensor", str(error["returned"]))]
    if error and error.get("where") == "backward":
        message = str(error.get("message", ""))
        node = str(error.get("node", "")).split(" = ", 1)[0]
        step = next((s for s in program.steps if s.name == node), None)
        if "read-only" in message or "read only" in message:
            return [Finding(ENGINE, None, "read_only")]
        if step is not None and step.spec.broadcasts and "broadcast" in message and "shape" in message:
            shapes = {leaf.name: tuple(leaf.value.shape) for leaf in program.leaves}
            shapes.update({name: tuple(value.shape) for name, value in expected.values.items()})
            slot = next((i for i, a in enumerate(step.args) if isinstance(a, str)
                         and shapes.get(a) != shapes.get(step.name)), None)
            if slot is not None:
                return [Finding(step.op, slot, "unreduced_raises")]
        for step in program.steps:
            flag = got.requires_grad.get(step.name)
            if isinstance(flag, bool) and flag != expected.requires_grad.get(step.name):
                return [Finding(ENGINE, None, "requires_grad_flag")]
    # float32 where everything is float64 explains a failure only when it is all that is wrong: the results are
    # right to float32's precision, or an exception is about the clash (or raised on the float32 value).
    message = str(error.get("message", ""))
    clash = bool(error) and bool(_DTYPE_CLASH.search(message)) and all(
        got.dtype("leaf_data", leaf.name) in (None, "float64") for leaf in program.leaves)
    precise = not error and all(close(got.values[s.name], expected.values[s.name]) for s in program.steps
                                if s.name in got.values) and all(
        close(got.grads.get(n), expected.grads[n]) for n in graded_leaves(program, expected) if n in got.grads)
    failed_at = str(error.get("where", "")).removeprefix("forward: ") if error else ""
    for step in program.steps:
        if got.dtype("values", step.name) == "float32" and all(
                got.dtype("values" if a in got.values else "leaf_data", a) in (None, "float64")
                for a in step.args if isinstance(a, str)):
            consumed = any(step.name in s.args for s in program.steps if s.name == failed_at)
            if clash or precise or consumed:
                return [Finding(step.op, None, "value_dtype", "float32")]
    floats = [n for n in graded_leaves(program, expected)
              if got.dtype("grads", n) == "float32" and got.dtype("leaf_data", n) == "float64"]
    if (floats and precise) or (clash and error.get("where") == "backward"):
        return [Finding(ENGINE, None, "float32")]
    return []
