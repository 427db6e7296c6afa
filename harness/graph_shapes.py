"""Graphs given by a shape and a size instead of step by step: the timing probes' graphs of thousands of nodes.

``core.linear_time`` times wide graphs of up to 16k nodes: written out, one is a megabyte of
JSON the grader encodes and the worker decodes on every run. The grader sends its description
instead (``{"shape": "wide", "width": 8192}``), and the worker builds the same steps from it,
as the grader does when it needs the program itself (to verify a result, or as a failure's
evidence). The steps are the wire form ``Program.to_wire`` writes.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["WIDE", "MAX_WIDTH", "wide_steps", "wire_steps"]

WIDE: Final = "wide"
MAX_WIDTH: Final = 1 << 16
"""The widest graph a description may ask for (about 131k nodes): a worker never builds more from one."""


def wide_steps(width: int) -> list[dict[str, Any]]:
    """``width`` sums ``x + x``, added up pairwise, then summed: about ``2 * width`` nodes, depth ~log2(width)."""
    if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"a wide graph's width must be an integer from 1 to {MAX_WIDTH}")
    steps = [{"name": f"t{i}", "op": "add", "args": ["x", "x"], "params": {}} for i in range(width)]
    layer = [f"t{i}" for i in range(width)]
    depth = 0
    while len(layer) > 1:
        depth += 1
        following = []
        for i in range(0, len(layer) - 1, 2):
            name = f"s{depth}_{i // 2}"
            steps.append({"name": name, "op": "add", "args": [layer[i], layer[i + 1]], "params": {}})
            following.append(name)
        if len(layer) % 2:
            following.append(layer[-1])
        layer = following
    steps.append({"name": "y", "op": "sum", "args": [layer[0]], "params": {}})
    return steps


def wire_steps(wire: dict[str, Any]) -> list[dict[str, Any]]:
    """A wire program's steps: as written, or built from its ``described`` shape. Raises ValueError for a
    description it does not know."""
    described = wire.get("described")
    if described is None:
        return wire["steps"]
    if not isinstance(described, dict) or described.get("shape") != WIDE:
        raise ValueError(f"an unknown graph description: {str(described)[:80]}")
    return wide_steps(described.get("width"))
