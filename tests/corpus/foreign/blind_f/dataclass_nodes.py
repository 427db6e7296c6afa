"""Tiny autograd engine.

Design: a Tensor owns a ``Node`` (a dataclass) describing the op that made
it -- the parent tensors and a function computing the parents' gradients from
the output gradient.  Leaves have ``node = None``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

GradFn = Callable[[torch.Tensor], tuple]


@dataclass(eq=False)
class Node:
    op: str
    parents: tuple
    grad_fn: GradFn
    meta: dict = field(default_factory=dict)


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: Optional[torch.Tensor] = None
        self.node: Optional[Node] = None

    def __repr__(self) -> str:
        op = self.node.op if self.node else "leaf"
        return f"Tensor(op={op}, shape={tuple(self.data.shape)})"

    # --- ops ---

    def __add__(self, other: Tensor) -> Tensor:
        out = Tensor(self.data + other.data,
                     requires_grad=self.requires_grad or other.requires_grad)
        if out.requires_grad:
            out.node = Node("add", (self, other), lambda g: (g, g))
        return out

    def __mul__(self, other: Tensor) -> Tensor:
        out = Tensor(self.data * other.data,
                     requires_grad=self.requires_grad or other.requires_grad)
        if out.requires_grad:
            a, b = self.data, other.data
            out.node = Node("mul", (self, other), lambda g: (g * b, g * a))
        return out

    def __matmul__(self, other: Tensor) -> Tensor:
        out = Tensor(self.data @ other.data,
                     requires_grad=self.requires_grad or other.requires_grad)
        if out.requires_grad:
            a, b = self.data, other.data
            out.node = Node("matmul", (self, other), lambda g: (g @ b.T, a.T @ g))
        return out

    def relu(self) -> Tensor:
        out = Tensor(torch.clamp(self.data, min=0), requires_grad=self.requires_grad)
        if out.requires_grad:
            pos = self.data > 0
            out.node = Node("relu", (self,), lambda g: (torch.where(pos, g, torch.zeros_like(g)),))
        return out

    def sum(self) -> Tensor:
        out = Tensor(self.data.sum(), requires_grad=self.requires_grad)
        if out.requires_grad:
            shape = self.data.shape
            out.node = Node("sum", (self,), lambda g: (g * torch.ones(shape, dtype=g.dtype),))
        return out

    # --- backward ---

    def _topo(self) -> list[Tensor]:
        # iterative post-order DFS so deep graphs don't hit the recursion limit
        order: list[Tensor] = []
        visited: set[int] = set()
        stack: list[tuple[Tensor, bool]] = [(self, False)]
        while stack:
            t, expanded = stack.pop()
            if expanded:
                order.append(t)
                continue
            if id(t) in visited:
                continue
            visited.add(id(t))
            stack.append((t, True))
            if t.node is not None:
                for p in t.node.parents:
                    if p.requires_grad and id(p) not in visited:
                        stack.append((p, False))
        return order

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        if grad is None:
            grad = torch.tensor(1.0, dtype=self.data.dtype)
        grads: dict[int, torch.Tensor] = {id(self): grad}
        for t in reversed(self._topo()):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.node is None:
                if t.requires_grad:
                    t.grad = g if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t.node.parents, t.node.grad_fn(g)):
                if not p.requires_grad:
                    continue
                grads[id(p)] = pg if id(p) not in grads else grads[id(p)] + pg
