"""Worker side of ``--variant function``: are the graph's backward formulas the submission's own?

In that variant torch's engine runs backward over the submission's ``torch.autograd.Function``
classes. Every node of a recorded graph must then be one of them (or the node that stores a
leaf's gradient); any other node (``MulBackward0``, say) is a formula torch's autograd
derived itself. A backward that reaches such a node by any route is found where the node
lives, after every forward pass:

* through a live tensor's ``grad_fn`` (and its ``.grad``'s and its view base's), following
  ``next_functions``;
* as a node object anything holds (a list, a closure, a ``ctx`` attribute): node objects are
  garbage-collected objects, found among all of them whoever holds them;
* through the submission's own nodes: what their ``ctx`` keeps (attributes, saved tensors).

Two more looks happen as it is recorded (``harness.sandbox.worker.autograd_guard`` and the
saved-tensor hook): a torch result whose node is torch's, and a tensor with torch's node
saved for a backward. A finding only incriminates: its absence proves nothing.
"""

from __future__ import annotations

import gc
import itertools
from typing import Any, Callable, Final

import torch

__all__ = ["foreign_formulas", "foreign_node"]

_GRAD_FN = torch._C.TensorBase.grad_fn.__get__
_GRAD = torch._C.TensorBase.grad.__get__
_BASE = torch._C.TensorBase._base.__get__
_TensorBase = torch._C.TensorBase
_FunctionBase = torch._C._FunctionBase
"""The base of every node a ``torch.autograd.Function`` records (its ``ctx``)."""
_MAX_NODES: Final = 100_000
_COMPRESS, _REPEAT, _MAP = itertools.compress, itertools.repeat, map


def foreign_node(node: Any) -> str | None:
    """The name of ``node`` when it is torch's own formula (not a Function's, not the gradient store), else None."""
    if node is None or isinstance(node, _FunctionBase):
        return None
    name = type(node).__name__
    return None if name == "AccumulateGrad" else name


def _is_node_type(kind: type) -> bool:
    """Whether ``kind`` is a class of graph nodes: torch's (C++) or a Function's. Node classes are plain ``type``s,
    so nothing of another metaclass (the submission's) is asked anything."""
    if type(kind) is not type:
        return False
    try:
        return issubclass(kind, _FunctionBase) or getattr(torch._C._functions, kind.__name__, None) is kind or (
            kind.__module__ == "builtins" and hasattr(kind, "next_functions") and hasattr(kind, "register_prehook"))
    except Exception:  # a class torch itself cannot read is not evidence
        return False


def _tensor_nodes(tensor: Any) -> list[Any]:
    found = []
    for read in (lambda t: t, _GRAD, _BASE):
        try:
            other = read(tensor)
            node = _GRAD_FN(other) if other is not None else None
        except Exception:  # a tensor torch itself cannot read is not evidence
            continue
        if node is not None:
            found.append(node)
    return found


def _held(value: Any, depth: int = 0) -> list[Any]:
    """Nodes a ``ctx`` attribute holds: itself, a tensor's, or in a container (two levels deep)."""
    if isinstance(value, _TensorBase):
        return _tensor_nodes(value)
    kind = type(value)  # only the builtin containers themselves: a subclass's iteration is the submission's code
    if depth < 2 and kind in (list, tuple, set, frozenset):
        return [node for item in list(value)[:64] for node in _held(item, depth + 1)]
    if depth < 2 and kind is dict:
        return [node for item in list(dict.values(value))[:64] for node in _held(item, depth + 1)]
    return [value] if _is_node_type(kind) else []


def foreign_formulas(module_name: str, skip: Callable[[Any], bool] = lambda obj: False) -> list[str]:
    """Names of graph nodes that are not the module's own Functions, reachable from live tensors, held as
    objects anywhere, or kept by the module's own nodes (tensors ``skip`` names are the grader's own)."""
    objects = gc.get_objects()
    stack: list[Any] = []
    for obj in _COMPRESS(objects, _MAP(isinstance, objects, _REPEAT(_TensorBase))):
        if not skip(obj):
            stack.extend(_tensor_nodes(obj))
    node_types = {kind for kind in set(_MAP(type, objects)) if _is_node_type(kind)}
    if node_types:
        stack.extend(obj for obj in _COMPRESS(objects, _MAP(node_types.__contains__, _MAP(type, objects)))
                     if not skip(obj))
    del objects
    seen: set[int] = set()
    found: list[str] = []
    while stack and len(seen) < _MAX_NODES:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        forward = getattr(type(node), "_forward_cls", None)
        if isinstance(node, _FunctionBase):
            if getattr(forward, "__module__", None) != module_name:
                name = f"{getattr(forward, '__qualname__', '?')} from {getattr(forward, '__module__', '?')}"
                if name not in found:
                    found.append(name)
            else:  # the submission's own node: what its ctx keeps may be torch's
                stack.extend(_kept_by(node))
        elif (name := foreign_node(node)) is not None and name not in found:
            found.append(name)
        try:
            stack.extend(fn for fn, _ in getattr(node, "next_functions", ()) or ())
        except Exception:  # a node torch itself cannot read is not evidence
            continue
    return found


def _kept_by(node: Any) -> list[Any]:
    kept = []
    attributes = getattr(node, "__dict__", None)
    for value in list(dict.values(attributes))[:64] if type(attributes) is dict else ():
        kept += _held(value)
    try:
        for tensor in node.saved_tensors:
            kept += _held(tensor)
    except Exception:  # freed after a backward, or never saved: nothing kept
        pass
    return kept
