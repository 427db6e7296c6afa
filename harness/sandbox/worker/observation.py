"""What the worker reports of the submission's objects: plain facts, never a verdict.

Tensors become plain numbers (and whether they carry torch's autograd), other values their
type's name, exceptions their type, message, last frames and place in the submission.
"""

from __future__ import annotations

import inspect
import os
import traceback
from typing import Any, Sequence

import torch

from harness.program import encode_tensor
from harness.sandbox.worker.autograd_guard import carries_autograd
from harness.sandbox.worker.running_node import running_node

__all__ = ["SUBMISSION_FILE", "changed_since", "copy_of", "data_of", "error_facts", "has_member", "observe_tensor",
           "requires_grad_of"]


def observe_tensor(value: Any) -> dict[str, Any] | None:
    """A torch tensor as plain numbers, or a description of whatever else it is."""
    if value is None:
        return None
    if not isinstance(value, torch.Tensor):
        return {"not_tensor": type(value).__name__}
    out = encode_tensor(value.detach())
    if carries_autograd(value):  # integrity: read past a subclass's requires_grad/grad_fn properties
        out["autograd"] = True
    if type(value) is not torch.Tensor:
        out["subclass"] = type(value).__name__
    return out


def data_of(obj: Any) -> dict[str, Any] | None:
    data = getattr(obj, "data", None)
    if data is None:
        return {"not_tensor": f"{type(obj).__name__} without .data"}
    return observe_tensor(data)


SUBMISSION_FILE: list[str] = []
"""The imported submission's path inside the sandbox, to find its frames in a traceback."""


def error_facts(where: str, exc: BaseException, nodes: dict[int, str] | None = None,
                objects: Sequence[Any] = ()) -> dict[str, Any]:
    """An exception as plain facts: its type and message, the last frames, and its place in the submission.

    ``nodes`` maps id() of the graph's tensors (``objects``) to their steps (``h = x @ w``): the
    submission's frames name the node whose backward rule was running (``running_node``).
    """
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in tb[-4:]]
    error: dict[str, Any] = {"where": where, "type": type(exc).__name__, "message": str(exc)[:2000],
                             "frames": frames}
    returned = getattr(exc, "returned", None)
    if isinstance(returned, str):  # an op's result that is not a tensor: what it was, as a fact
        error["returned"] = returned[:40]
    own = [f for f in tb if SUBMISSION_FILE and f.filename == SUBMISSION_FILE[0]]
    if own:
        error["line"] = own[-1].lineno
        error["source_line"] = (own[-1].line or "").strip()[:200]
    if nodes:
        node = running_node(exc.__traceback__, nodes, objects, SUBMISSION_FILE[0] if SUBMISSION_FILE else None)
        if node:
            error["node"] = node
    return error


def requires_grad_of(obj: Any) -> Any:
    value = getattr(obj, "requires_grad", None)
    return value if isinstance(value, bool) else None if value is None else repr(value)[:40]


def has_member(cls: type, name: str) -> bool:
    attr = inspect.getattr_static(cls, name, None)
    # What every class inherits from object is not the candidate's work.
    return attr is not None and attr is not inspect.getattr_static(object, name, None)


def copy_of(operand: Any) -> Any:
    """What an operand's values are now, or None when it has none to compare (a number, index tensor)."""
    data = getattr(operand, "data", None) if not isinstance(operand, torch.Tensor) else None
    return data.detach().clone() if isinstance(data, torch.Tensor) else None


def changed_since(operand: Any, copy: torch.Tensor) -> bool:
    """Whether an operand's values are no longer ``copy`` (taken by ``copy_of`` before its op ran)."""
    data = getattr(operand, "data", None)
    if not (isinstance(data, torch.Tensor) and data.shape == copy.shape and data.dtype == copy.dtype):
        return True
    if data.is_floating_point() or data.is_complex():
        # A nan left alone is unchanged: torch.equal calls it different from itself.
        return not bool(torch.allclose(data, copy, rtol=0.0, atol=0.0, equal_nan=True))
    return not bool(torch.equal(data, copy))
