"""Reverse-mode autodiff: Kahn's algorithm schedules the backward sweep.

backward() first discovers the graph and counts, for every node, how many
edges arrive from its consumers; the schedule is then produced by Kahn's
algorithm (a node is emitted when all of its consumers have been emitted),
and the gradients are pushed through the schedule in that order.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Optional, Sequence

import torch

_record_stack: list[bool] = [True]


class no_grad:
    def __enter__(self) -> "no_grad":
        _record_stack.append(False)
        return self

    def __exit__(self, *exc) -> None:
        _record_stack.pop()


def _reduce_broadcast(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum `grad` over the axes that broadcasting expanded, back to `shape`."""
    if grad.shape == shape:
        return grad
    lead = grad.dim() - len(shape)
    summed = grad.sum(dim=list(range(lead))) if lead > 0 else grad
    stretched = [i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1]
    if stretched:
        summed = summed.sum(dim=stretched, keepdim=True)
    return summed


Backward = Callable[[torch.Tensor], Sequence[Optional[torch.Tensor]]]


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False) -> None:
        self.data = data
        self.requires_grad = requires_grad
        self.grad: Optional[torch.Tensor] = None
        self._parents: tuple[Tensor, ...] = ()
        self._backward: Optional[Backward] = None
        self._plan: Optional[list[Tensor]] = None

    def __repr__(self) -> str:
        return f"Tensor(shape={tuple(self.data.shape)}, requires_grad={self.requires_grad})"

    @staticmethod
    def _result(data: torch.Tensor, parents: tuple[Tensor, ...], backward: Backward) -> Tensor:
        out = Tensor(data)
        if _record_stack[-1] and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents = parents
            out._backward = backward
        return out

    # ------------------------------------------------------------------ ops
    def __add__(self, other: Tensor) -> Tensor:
        sa, sb = self.data.shape, other.data.shape
        return self._result(
            self.data + other.data,
            (self, other),
            lambda g: (_reduce_broadcast(g, sa), _reduce_broadcast(g, sb)),
        )

    def __mul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._result(
            a * b,
            (self, other),
            lambda g: (_reduce_broadcast(g * b, a.shape), _reduce_broadcast(g * a, b.shape)),
        )

    def __matmul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self) -> Tensor:
        mask = self.data > 0
        return self._result(self.data * mask, (self,), lambda g: (g * mask,))

    def sum(self) -> Tensor:
        shape = self.data.shape
        return self._result(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def mean(self) -> Tensor:
        shape, n = self.data.shape, self.data.numel()
        return self._result(self.data.mean(), (self,), lambda g: ((g / n).expand(shape).clone(),))

    @property
    def T(self) -> Tensor:
        return self._result(self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, shape: tuple[int, ...]) -> Tensor:
        old = self.data.shape
        return self._result(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def maximum(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        left = (a >= b).to(a.dtype)
        return self._result(
            torch.maximum(a, b),
            (self, other),
            lambda g: (_reduce_broadcast(g * left, a.shape), _reduce_broadcast(g * (1 - left), b.shape)),
        )

    # ------------------------------------------------------------- backward
    def _schedule(self) -> list[Tensor]:
        consumers: dict[int, int] = {id(self): 0}
        stack = [self]
        while stack:
            node = stack.pop()
            for p in node._parents:
                if not p.requires_grad:
                    continue
                if id(p) not in consumers:
                    consumers[id(p)] = 0
                    stack.append(p)
                consumers[id(p)] += 1
        schedule: list[Tensor] = []
        ready = deque([self])
        while ready:
            node = ready.popleft()
            schedule.append(node)
            for p in node._parents:
                if not p.requires_grad:
                    continue
                consumers[id(p)] -= 1
                if consumers[id(p)] == 0:
                    ready.append(p)
        return schedule

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        plan = self._plan = self._schedule()
        flowing: dict[int, torch.Tensor] = {
            id(self): torch.ones_like(self.data) if grad is None else grad
        }
        for node in plan:
            g = flowing.pop(id(node))
            if node._backward is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for parent, pg in zip(node._parents, node._backward(g)):
                if parent.requires_grad:
                    key = id(parent)
                    flowing[key] = flowing[key] + pg if key in flowing else pg
            node._parents, node._backward = (), None
