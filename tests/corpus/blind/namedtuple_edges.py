"""Edges are NamedTuples (parent, backward rule). Every node, intermediate or leaf,
collects its gradient in `.grad`; the order is the reverse of an iterative post-order."""

from typing import Callable, NamedTuple

import torch


class Edge(NamedTuple):
    parent: "Tensor"
    rule: Callable[[torch.Tensor], torch.Tensor]


def _unbroadcast(g, shape):
    if g.shape == shape:
        return g
    g = g.sum(dim=tuple(range(g.dim() - len(shape)))) if g.dim() > len(shape) else g
    for i, n in enumerate(shape):
        if n == 1:
            g = g.sum(dim=i, keepdim=True)
    return g


def _accumulate(t, g):
    if t.grad is None:
        t.grad = g
    else:
        t.grad += g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.edges: list[Edge] = []

    def _out(self, data, *edges):
        live = [e for e in edges if e.parent.requires_grad]
        out = Tensor(data, requires_grad=bool(live))
        out.edges = live
        return out

    def _num(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        other = self._num(other)
        return self._out(self.data + other.data,
                         Edge(self, lambda g: _unbroadcast(g, self.data.shape)),
                         Edge(other, lambda g: _unbroadcast(g, other.data.shape)))

    def __mul__(self, other):
        other = self._num(other)
        return self._out(self.data * other.data,
                         Edge(self, lambda g: _unbroadcast(g * other.data, self.data.shape)),
                         Edge(other, lambda g: _unbroadcast(g * self.data, other.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, other):
        return self._out(self.data @ other.data,
                         Edge(self, lambda g: g @ other.data.T),
                         Edge(other, lambda g: self.data.T @ g))

    def relu(self):
        return self._out(self.data.relu(), Edge(self, lambda g: g * (self.data > 0)))

    def sum(self):
        return self._out(self.data.sum(), Edge(self, lambda g: g * torch.ones_like(self.data)))

    def log(self):
        return self._out(self.data.log(), Edge(self, lambda g: g / self.data))

    def backward(self, grad=None):
        post, seen = [], set()
        stack = [(self, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                if id(node) in seen:
                    continue
                seen.add(id(node))
            if i < len(node.edges):
                stack.append((node, i + 1))
                stack.append((node.edges[i].parent, 0))
            else:
                post.append(node)
        for node in post:
            if node.edges:
                node.grad = None
        self.grad = torch.ones_like(self.data) if grad is None else grad
        for node in reversed(post):
            if node.grad is None:
                continue
            for edge in node.edges:
                _accumulate(edge.parent, edge.rule(node.grad))
            node.edges = []
