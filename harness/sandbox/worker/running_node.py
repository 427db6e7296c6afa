"""Which graph node's backward rule was running when the submission raised (worker side).

An exception in backward is reported with the node whose rule raised (``in backward of
`h = x @ w```). Only the traceback's frames of the submission say which: this module reads
them, and runs none of the submission's code (attributes are read from ``__dict__``).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

__all__ = ["running_node"]


def running_node(tb: Any, nodes: dict[int, str], objects: Sequence[Any], submission: str | None) -> str | None:
    """The graph node whose backward rule was running, read from the submission's frames.

    ``nodes`` is in program order; ``objects`` are the graph's tensors. Engines hold that node
    in different places: a closure rule (micrograd) made in ``__matmul__`` holds it as ``out``,
    and ``self`` there is an *operand*; the loop of an iterative ``backward()`` holds the root
    as ``self`` and the node it runs in a loop variable; a recursive ``backward()`` runs as
    ``self`` in its innermost call; a ``backward(ctx, grad)`` rule holds only its context,
    which its node keeps as an attribute.
    """
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    own = [f for f in frames if f.f_code.co_filename == submission]
    if not own:
        return None
    order = {key: i for i, key in enumerate(nodes)}

    def held(frame: Any, *, but: tuple[str, ...] = ()) -> list[int]:
        return [id(v) for k, v in frame.f_locals.items() if id(v) in nodes and k not in but]

    def latest(ids: list[int]) -> str:
        return nodes[max(ids, key=order.__getitem__)]

    for frame in reversed(own):
        if id(frame.f_locals.get("out")) in nodes:
            return nodes[id(frame.f_locals["out"])]
    driver = own[0]
    recursive = [f for f in own if f.f_code is driver.f_code]
    if len(recursive) == 1 and (ids := held(driver, but=("self",))):
        return latest(ids)
    graph_types = {type(o) for o in objects}
    for frame in reversed(own):
        owner = _owner(frame, objects, graph_types, nodes)
        if owner is not None:
            return owner
    if id(recursive[-1].f_locals.get("self")) in nodes:
        return nodes[id(recursive[-1].f_locals["self"])]
    for frame in reversed(own):
        if ids := held(frame):
            return latest(ids)
    return None


def _owner(frame: Any, objects: Sequence[Any], graph_types: set[type], nodes: dict[int, str]) -> str | None:
    """The node that keeps the frame's first argument (a rule's context) as one of its attributes."""
    code = frame.f_code
    if not code.co_argcount:
        return None
    first = frame.f_locals.get(code.co_varnames[0])
    if first is None or issubclass(type(first), (int, float, str, torch.Tensor)) or type(first) in graph_types:
        return None  # a tensor of the graph (a helper's ``self``) is no rule's context
    for obj in objects:
        try:
            attributes = object.__getattribute__(obj, "__dict__")
        except (AttributeError, TypeError):
            continue
        if any(value is first for value in list(attributes.values())):
            return nodes.get(id(obj))
    return None
