"""Worker side of ``--variant function``: are the graph's backward formulas the submission's own?

In that variant torch's engine runs backward over the submission's ``torch.autograd.Function``
classes. Every node of a recorded graph must then be one of them (or the node that stores a
leaf's gradient); any other node (``MulBackward0``, say) is a formula torch's autograd
derived itself. A finding only incriminates: its absence proves nothing.
"""

from __future__ import annotations

import gc
from typing import Any, Final

import torch

__all__ = ["foreign_formulas"]

_GRAD_FN = torch._C.TensorBase.grad_fn.__get__
_MAX_NODES: Final = 100_000


def foreign_formulas(module_name: str) -> list[str]:
    """Names of graph nodes, reachable from live torch tensors, that are not the module's own Functions."""
    stack: list[Any] = []
    for obj in gc.get_objects():
        if isinstance(obj, torch._C.TensorBase):
            try:
                node = _GRAD_FN(obj)
            except Exception:
                continue
            if node is not None:
                stack.append(node)
    seen: set[int] = set()
    found: list[str] = []
    while stack and len(seen) < _MAX_NODES:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        forward = getattr(type(node), "_forward_cls", None)
        if forward is not None:
            if getattr(forward, "__module__", None) != module_name:
                name = f"{getattr(forward, '__qualname__', '?')} from {getattr(forward, '__module__', '?')}"
                if name not in found:
                    found.append(name)
        elif type(node).__name__ != "AccumulateGrad" and type(node).__name__ not in found:
            found.append(type(node).__name__)
        stack.extend(fn for fn, _ in getattr(node, "next_functions", ()) or ())
    return found
