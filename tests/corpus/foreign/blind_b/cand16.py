from __future__ import annotations

from typing import Callable, List, Optional

import torch

# DFS visit states for the topological sort
UNVISITED, IN_PROGRESS, FINISHED = 0, 1, 2


class Tensor:
    data: torch.Tensor
    grad: Optional[torch.Tensor]
    requires_grad: bool

    def __init__(self, data: torch.Tensor, requires_grad: bool = False) -> None:
        self.data = data
        self.grad = None
        self.requires_grad = requires_grad
        self._sources: List[Tensor] = []
        self._propagate: Optional[Callable[[], None]] = None

    # ---------------------------------------------------------------- private
    @staticmethod
    def _constant(value, like: Tensor) -> Tensor:
        if isinstance(value, Tensor):
            return value
        return Tensor(torch.tensor(value, dtype=like.data.dtype))

    @staticmethod
    def _derived(data: torch.Tensor, sources: List[Tensor]) -> Tensor:
        out = Tensor(data)
        out.requires_grad = any(s.requires_grad for s in sources)
        if out.requires_grad:
            out._sources = sources
        return out

    def _accumulate(self, g: torch.Tensor) -> None:
        if not self.requires_grad:
            return
        if self.grad is None:
            self.grad = g.clone()
        else:
            self.grad = self.grad + g

    # ------------------------------------------------------------------- core
    def __add__(self, other) -> Tensor:
        other = Tensor._constant(other, self)
        out = Tensor._derived(self.data + other.data, [self, other])

        def propagate() -> None:
            self._accumulate(out.grad)
            other._accumulate(out.grad)
        out._propagate = propagate
        return out

    def __radd__(self, other) -> Tensor:
        return self + other

    def __mul__(self, other) -> Tensor:
        other = Tensor._constant(other, self)
        out = Tensor._derived(self.data * other.data, [self, other])

        def propagate() -> None:
            self._accumulate(out.grad * other.data)
            other._accumulate(out.grad * self.data)
        out._propagate = propagate
        return out

    def __rmul__(self, other) -> Tensor:
        return self * other

    def __matmul__(self, other: Tensor) -> Tensor:
        out = Tensor._derived(self.data @ other.data, [self, other])

        def propagate() -> None:
            # (n, m) @ (m, p): dL/dA = G @ B^T is (n, m), dL/dB = A^T @ G is (m, p)
            if self.requires_grad:
                self.grad = out.grad @ other.data.T
            if other.requires_grad:
                other.grad = self.data.T @ out.grad
        out._propagate = propagate
        return out

    def relu(self) -> Tensor:
        out = Tensor._derived(torch.relu(self.data), [self])

        def propagate() -> None:
            self._accumulate(out.grad * (self.data > 0).to(out.grad.dtype))
        out._propagate = propagate
        return out

    def sum(self) -> Tensor:
        out = Tensor._derived(self.data.sum(), [self])

        def propagate() -> None:
            self._accumulate(out.grad.expand(self.data.shape))
        out._propagate = propagate
        return out

    # ------------------------------------------------------------- extensions
    def __neg__(self) -> Tensor:
        out = Tensor._derived(-self.data, [self])

        def propagate() -> None:
            self._accumulate(-out.grad)
        out._propagate = propagate
        return out

    def __sub__(self, other) -> Tensor:
        return self + (-Tensor._constant(other, self))

    def __rsub__(self, other) -> Tensor:
        return Tensor._constant(other, self) + (-self)

    def exp(self) -> Tensor:
        out = Tensor._derived(torch.exp(self.data), [self])

        def propagate() -> None:
            self._accumulate(out.grad * out.data)
        out._propagate = propagate
        return out

    def log(self) -> Tensor:
        out = Tensor._derived(torch.log(self.data), [self])

        def propagate() -> None:
            self._accumulate(out.grad / self.data)
        out._propagate = propagate
        return out

    def tanh(self) -> Tensor:
        out = Tensor._derived(torch.tanh(self.data), [self])

        def propagate() -> None:
            self._accumulate(out.grad * (1.0 - out.data * out.data))
        out._propagate = propagate
        return out

    @property
    def T(self) -> Tensor:
        out = Tensor._derived(self.data.T, [self])

        def propagate() -> None:
            self._accumulate(out.grad.T)
        out._propagate = propagate
        return out

    def reshape(self, shape) -> Tensor:
        out = Tensor._derived(self.data.reshape(shape), [self])

        def propagate() -> None:
            self._accumulate(out.grad.reshape(self.data.shape))
        out._propagate = propagate
        return out

    # --------------------------------------------------------------- backward
    def _topological_order(self) -> List[Tensor]:
        state = {}
        order: List[Tensor] = []
        stack = [self]
        while stack:
            node = stack[-1]
            s = state.get(id(node), UNVISITED)
            if s == UNVISITED:
                state[id(node)] = IN_PROGRESS
                for src in node._sources:
                    if state.get(id(src), UNVISITED) == UNVISITED:
                        stack.append(src)
            else:
                stack.pop()
                if s == IN_PROGRESS:
                    state[id(node)] = FINISHED
                    order.append(node)
        return order

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        self.grad = torch.ones_like(self.data) if grad is None else grad.clone()
        order = self._topological_order()
        for node in reversed(order):
            if node.requires_grad and node._propagate is not None:
                node._propagate()
        for node in order:          # release the graph
            node._sources = []
            node._propagate = None
