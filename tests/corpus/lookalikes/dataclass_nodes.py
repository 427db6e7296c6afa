"""A correct core engine built from dataclasses, an enum of ops and type hints.

Type-only imports sit under ``TYPE_CHECKING`` and annotations are never
evaluated (``from __future__ import annotations``): a type hint that names
torch.autograd is documentation, not a use.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import torch

if TYPE_CHECKING:
    from torch.autograd import Function as TorchFunction  # only for comparing signatures in an editor


class Op(enum.Enum):
    LEAF = "leaf"
    ADD = "add"
    MUL = "mul"
    MATMUL = "matmul"
    RELU = "relu"
    SUM = "sum"


@dataclass(eq=False)
class Node:
    op: Op
    inputs: Sequence[Tensor] = ()
    rule: Callable[[torch.Tensor], Sequence[torch.Tensor]] | None = None
    contributions: list[torch.Tensor] = field(default_factory=list)


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False) -> None:
        self.data = data
        self.requires_grad = requires_grad
        self.grad: torch.Tensor | None = None
        self.node = Node(Op.LEAF)

    def _result(self, op: Op, data: torch.Tensor, inputs: Sequence[Tensor], rule) -> Tensor:
        out = Tensor(data, any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out.node = Node(op, tuple(inputs), rule)
        return out

    def __add__(self, other: Tensor) -> Tensor:
        return self._result(Op.ADD, self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._result(Op.MUL, a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._result(Op.MATMUL, a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self) -> Tensor:
        x = self.data
        return self._result(Op.RELU, x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def sum(self) -> Tensor:
        x = self.data
        return self._result(Op.SUM, x.sum(), (self,), lambda g: (g.expand(x.shape).clone(),))

    def backward(self) -> None:
        order: list[Tensor] = []
        seen = {id(self)}
        stack: list[tuple[Tensor, int]] = [(self, 0)]
        while stack:
            t, i = stack.pop()
            if i < len(t.node.inputs):
                stack.append((t, i + 1))
                child = t.node.inputs[i]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(t)
        self.node.contributions.append(torch.ones_like(self.data))
        for t in reversed(order):
            parts, t.node.contributions = t.node.contributions, []
            if not parts or not t.requires_grad:
                continue
            g = parts[0]
            for part in parts[1:]:
                g = g + part
            if t.node.op is Op.LEAF:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for child, cg in zip(t.node.inputs, t.node.rule(g)):
                if child.requires_grad:
                    child.node.contributions.append(cg)
