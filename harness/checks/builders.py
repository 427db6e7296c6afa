"""Fixed programs written by hand: the builders the targeted checks share."""

from __future__ import annotations

import torch

from harness.program import Leaf, Program, Step

__all__ = ["tensor", "program"]


def tensor(values, dtype=torch.float64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


def program(leaves: dict[str, tuple[torch.Tensor, bool]], steps: list[tuple[str, str, list]],
            upstream: torch.Tensor | None = None, passes: int = 1) -> Program:
    """A program from ``{name: (value, requires_grad)}`` and ``(name, op, args)`` steps; the last step is the output."""
    built = tuple(Step(name, op, tuple(args)) for name, op, args in steps)
    return Program(tuple(Leaf(n, v, rg) for n, (v, rg) in leaves.items()), built, built[-1].name, upstream, passes)
