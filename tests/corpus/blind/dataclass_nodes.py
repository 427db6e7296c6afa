"""Graph nodes are dataclasses kept apart from the tensors: a Tensor points at the Node
that produced it, the Node knows its input tensors and a vector-Jacobian product."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F


def _fit(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum a broadcast gradient back to the operand's own shape."""
    while g.dim() > len(shape):
        g = g.sum(0)
    for d, s in enumerate(shape):
        if s == 1:
            g = g.sum(d, keepdim=True)
    return g


@dataclass(eq=False)
class Node:
    inputs: tuple = ()
    vjp: Callable | None = None
    grad: torch.Tensor | None = field(default=None, repr=False)


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.node: Node | None = None

    @classmethod
    def _from(cls, data, inputs, vjp):
        out = cls(data, requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out.node = Node(tuple(inputs), vjp)
        return out

    def __add__(self, other):
        sa, sb = self.data.shape, other.data.shape
        return Tensor._from(self.data + other.data, (self, other), lambda g: (_fit(g, sa), _fit(g, sb)))

    def __mul__(self, other):
        a, b = self.data, other.data
        return Tensor._from(a * b, (self, other), lambda g: (_fit(g * b, a.shape), _fit(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._from(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        a = self.data
        return Tensor._from(a.relu(), (self,), lambda g: (g.masked_fill(a <= 0, 0.0),))

    def sum(self):
        a = self.data
        return Tensor._from(a.sum(), (self,), lambda g: (torch.full_like(a, 1.0) * g,))

    def maximum(self, other):
        a, b = self.data, other.data
        share = torch.where(a > b, 1.0, torch.where(a < b, 0.0, 0.5)).to(a.dtype)
        return Tensor._from(torch.maximum(a, b), (self, other), lambda g: (g * share, g * (1 - share)))

    def max_pool2d(self, k: int):
        x = self.data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        win = x[:, :, :ho * k, :wo * k].reshape(n, c, ho, k, wo, k).permute(0, 1, 2, 4, 3, 5)
        win = win.reshape(n, c, ho, wo, k * k)
        best = win.argmax(dim=-1, keepdim=True)   # first maximum, as torch picks

        def vjp(g):
            gw = torch.zeros_like(win).scatter_(-1, best, g.unsqueeze(-1))
            gw = gw.reshape(n, c, ho, wo, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)
            gx = torch.zeros_like(x)
            gx[:, :, :ho * k, :wo * k] = gw
            return (gx,)

        return Tensor._from(win.gather(-1, best).squeeze(-1), (self,), vjp)

    def avg_pool2d(self, k: int):
        x = self.data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        out = x[:, :, :ho * k, :wo * k].reshape(n, c, ho, k, wo, k).mean(dim=(3, 5))

        def vjp(g):
            gx = torch.zeros_like(x)
            gx[:, :, :ho * k, :wo * k] = (g[:, :, :, None, :, None] / (k * k)).expand(n, c, ho, k, wo, k).reshape(n, c, ho * k, wo * k)
            return (gx,)

        return Tensor._from(out, (self,), vjp)

    def conv2d(self, weight: Tensor):
        x, w = self.data, weight.data
        kh, kw = w.shape[2], w.shape[3]
        patches = x.unfold(2, kh, 1).unfold(3, kw, 1)    # n, c, ho, wo, kh, kw
        out = torch.einsum("ncijuv,ocuv->noij", patches, w)

        def vjp(g):
            gw = torch.einsum("ncijuv,noij->ocuv", patches, g)
            gx = torch.zeros_like(x)
            ho, wo = g.shape[2], g.shape[3]
            for u in range(kh):
                for v in range(kw):
                    gx[:, :, u:u + ho, v:v + wo] += torch.einsum("noij,oc->ncij", g, w[:, :, u, v])
            return gx, gw

        return Tensor._from(out, (self, weight), vjp)

    def __getitem__(self, ids: torch.Tensor):
        W = self.data

        def vjp(g):
            return (torch.zeros_like(W).index_put_((ids,), g, accumulate=True),)

        return Tensor._from(W[ids], (self,), vjp)

    def batch_norm(self, eps: float = 1e-5):
        x = self.data
        mu = x.mean(dim=0, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=0, keepdim=True)
        std = (var + eps).sqrt()
        xhat = (x - mu) / std

        def vjp(g):
            gm = g.mean(dim=0, keepdim=True)
            gxm = (g * xhat).mean(dim=0, keepdim=True)
            return ((g - gm - xhat * gxm) / std,)

        return Tensor._from(xhat, (self,), vjp)

    def backward(self, grad: torch.Tensor | None = None):
        order: list[Tensor] = []
        visited: set[int] = set()
        stack = [iter([self])]
        path: list[Tensor] = []
        while stack:                    # post-order DFS on iterators, no recursion
            t = next(stack[-1], None)
            if t is None:
                stack.pop()
                if path:
                    order.append(path.pop())
                continue
            if id(t) in visited:
                continue
            visited.add(id(t))
            path.append(t)
            stack.append(iter(t.node.inputs if t.node else ()))
        seed = torch.ones_like(self.data) if grad is None else grad
        pending = {id(self): seed}
        for t in reversed(order):
            g = pending.pop(id(t), None)
            if g is None:
                continue
            if t.node is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for src, sg in zip(t.node.inputs, t.node.vjp(g)):
                if src.requires_grad:
                    pending[id(src)] = pending[id(src)] + sg if id(src) in pending else sg
            t.node = None
