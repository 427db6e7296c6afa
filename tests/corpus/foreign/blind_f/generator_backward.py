"""autograd engine (interview)

Each op gives its result a *generator function* ``_flow(g)``.  Called with the
gradient of the result it yields ``(input, contribution)`` pairs, one per input
that wants a gradient, so an op only does the work that is actually needed.
``backward`` orders the graph and drains these generators, outputs first.
"""
from __future__ import annotations

from typing import Iterator, Optional, Tuple

import torch


def _fit(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Undo broadcasting: sum g over the axes where the operand was stretched."""
    lead = g.dim() - len(shape)
    if lead:
        g = g.sum(dim=list(range(lead)))
    axes = [d for d, n in enumerate(shape) if n == 1 and g.shape[d] != 1]
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    return g


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: Optional[torch.Tensor] = None
        self._inputs: Tuple["Tensor", ...] = ()
        self._flow = None

    def _wire(self, inputs, flow) -> "Tensor":
        if any(t.requires_grad for t in inputs):
            self.requires_grad = True
            self._inputs = inputs
            self._flow = flow
        return self

    # ------------------------------------------------------------------ ops
    def __add__(self, other: "Tensor") -> "Tensor":
        a, b = self, other

        def flow(g) -> Iterator:
            if a.requires_grad:
                yield a, _fit(g, a.data.shape)
            if b.requires_grad:
                yield b, _fit(g, b.data.shape)

        return Tensor(a.data + b.data)._wire((a, b), flow)

    def __mul__(self, other: "Tensor") -> "Tensor":
        a, b = self, other
        x, y = a.data, b.data

        def flow(g):
            if a.requires_grad:
                yield a, _fit(g * y, x.shape)
            if b.requires_grad:
                yield b, _fit(g * x, y.shape)

        return Tensor(x * y)._wire((a, b), flow)

    def __matmul__(self, other: "Tensor") -> "Tensor":
        a, b = self, other
        x, y = a.data, b.data

        def flow(g):
            if a.requires_grad:
                yield a, g @ y.mT
            if b.requires_grad:
                yield b, x.mT @ g

        return Tensor(x @ y)._wire((a, b), flow)

    def relu(self) -> "Tensor":
        a = self
        on = a.data > 0

        def flow(g):
            yield a, g * on

        return Tensor(a.data.clamp_min(0))._wire((a,), flow)

    def sum(self) -> "Tensor":
        a = self

        def flow(g):
            yield a, g.expand_as(a.data).clone()

        return Tensor(a.data.sum())._wire((a,), flow)

    def exp(self) -> "Tensor":
        a = self
        e = a.data.exp()

        def flow(g):
            yield a, g * e

        return Tensor(e)._wire((a,), flow)

    def log(self) -> "Tensor":
        a = self
        x = a.data

        def flow(g):
            yield a, g / x

        return Tensor(x.log())._wire((a,), flow)

    def sigmoid(self) -> "Tensor":
        a = self
        s = torch.sigmoid(a.data)

        def flow(g):
            yield a, g * s * (1 - s)

        return Tensor(s)._wire((a,), flow)

    def mean(self) -> "Tensor":
        a = self
        n = a.data.numel()

        def flow(g):
            yield a, (g / n).expand_as(a.data).clone()

        return Tensor(a.data.mean())._wire((a,), flow)

    # ------------------------------------------------------------- backward
    def _order(self):
        """Reverse topological order (output first), without recursion."""
        post, marked = [], set()
        stack = [(self, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                if id(node) in marked:
                    continue
                marked.add(id(node))
            if i < len(node._inputs):
                stack.append((node, i + 1))
                child = node._inputs[i]
                if child.requires_grad and id(child) not in marked:
                    stack.append((child, 0))
            else:
                post.append(node)
        post.reverse()
        return post

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        seed = grad or torch.ones_like(self.data)
        pending = {id(self): seed}
        for node in self._order():
            g = pending.pop(id(node), None)
            if g is None:
                continue
            if node._flow is None:
                if node.requires_grad:
                    node.grad = g if node.grad is None else node.grad + g
                continue
            for inp, contrib in node._flow(g):
                k = id(inp)
                pending[k] = pending[k] + contrib if k in pending else contrib
