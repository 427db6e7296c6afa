"""What the candidate's engine produced for one program, decoded from the worker's plain-data reply.

Nothing here judges: the comparisons with torch are ``context.judge``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from harness.program import Program, decode_tensor
from harness.report.safety import one_line

__all__ = ["Observation", "decoded", "describe_error"]


@dataclass
class Observation:
    """What the candidate's engine produced for one program, decoded into torch tensors."""

    values: dict[str, Any]
    requires_grad: dict[str, Any]
    grads: dict[str, Any]
    leaf_data_unchanged: dict[str, bool]
    error: dict[str, Any] | None
    seconds: float
    raw: dict[str, Any] = field(default_factory=dict)
    cpu_seconds: float | None = None
    """CPU time the worker spent on the request, read from the kernel by the grader (timed runs only)."""

    def dtype(self, section: str, name: str) -> str | None:
        """The dtype name the worker saw for ``name`` in ``values``, ``grads`` or ``leaf_data``."""
        wire = (self.raw.get(section) or {}).get(name)
        return wire.get("dtype") if isinstance(wire, dict) else None

    def subclass(self, section: str, name: str) -> str | None:
        wire = (self.raw.get(section) or {}).get(name)
        return wire.get("subclass") if isinstance(wire, dict) else None


def _decode(wire: Any) -> Any:
    """A wire tensor -> torch tensor; None stays None; anything else stays a description."""
    if wire is None:
        return None
    if isinstance(wire, dict) and "values" in wire:
        return decode_tensor(wire, "float64" if wire.get("dtype") not in ("int64",) else "int64")
    return wire


def _unchanged(program: Program, after: dict[str, Any]) -> dict[str, bool]:
    """Per leaf: is its .data after the run exactly what was sent? Judged here, not in the worker."""
    out = {}
    for leaf in program.leaves:
        if leaf.raw or leaf.name not in after:
            continue
        got = _decode(after[leaf.name])
        sent = leaf.value.to(torch.float64)
        out[leaf.name] = isinstance(got, torch.Tensor) and got.shape == sent.shape and bool(
            torch.equal(got.to(torch.float64), sent))
    return out


def decoded(program: Program, reply: dict[str, Any], seconds: float, cpu: float | None) -> Observation:
    return Observation(
        values={k: _decode(v) for k, v in reply.get("values", {}).items()},
        requires_grad=dict(reply.get("requires_grad", {})),
        grads={k: _decode(v) for k, v in reply.get("grads", {}).items()},
        leaf_data_unchanged=_unchanged(program, reply.get("leaf_data", {})),
        error=reply.get("error"),
        seconds=seconds,
        raw=reply,
        cpu_seconds=cpu,
    )


def describe_error(error: dict[str, Any]) -> str:
    """An exception from the candidate's code, with its place: the graph node and the submission's line.

    ``RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x4 and 3x4), in backward of
    `h = x @ w` (line 42: self.grad += out.grad @ other.data)``. One line whatever the worker sent:
    its newlines and control characters are shown as escapes, so it cannot draw lines of a report.
    """
    where = one_line(str(error.get("where", "")))
    kind, message = one_line(str(error.get("type", "Exception"))), one_line(str(error.get("message", "")))
    text = f"{kind}: {message}".strip()
    if error.get("type") == "NotImplementedError":
        text = f"not implemented ({message or 'NotImplementedError'})"
    node = error.get("node")
    if node and where == "backward":
        text += f", in backward of `{one_line(str(node))}`"
    elif node and where.startswith("forward"):
        text += f", in forward at `{one_line(str(node))}`"
    elif where:
        text += f" [in {where}]"
    if error.get("line"):
        source = error.get("source_line")
        text += f" (line {error['line']}" + (f": {one_line(str(source))})" if source else ")")
    return text
