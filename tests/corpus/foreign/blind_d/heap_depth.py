"""Autograd ordered by depth with a priority queue.

Every tensor knows its depth (leaves are 0); a result is one deeper than its
inputs. backward() keeps a max-heap on depth: a node is popped only after every
deeper node, so all of its consumers have already sent their gradients.
Core, broadcasting, backward(grad), two passes, exp, tanh.
"""
from __future__ import annotations

import heapq
import itertools

import torch

_tiebreak = itertools.count()


def _sum_to(g, shape):
    lead = g.dim() - len(shape)
    for _ in range(lead):
        g = g.sum(dim=0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] > 1:
            g = g.sum(dim=axis, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.depth = 0
        self._parents = ()
        self._vjp = None

    @staticmethod
    def _new(data, parents, vjp):
        out = Tensor(data, requires_grad=any(p.requires_grad for p in parents))
        if out.requires_grad:
            out.depth = parents[0].depth + 1
            out._parents = parents
            out._vjp = vjp
        return out

    def __add__(self, other):
        sa, sb = self.data.shape, other.data.shape
        return Tensor._new(self.data + other.data, (self, other),
                           lambda g: (_sum_to(g, sa), _sum_to(g, sb)))

    def __mul__(self, other):
        a, b = self.data, other.data
        return Tensor._new(a * b, (self, other),
                           lambda g: (_sum_to(g * b, a.shape), _sum_to(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._new(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        keep = self.data > 0
        return Tensor._new(torch.relu(self.data), (self,), lambda g: (g * keep,))

    def sum(self):
        shape = self.data.shape
        return Tensor._new(self.data.sum(), (self,), lambda g: (g * torch.ones(shape, dtype=g.dtype),))

    def exp(self):
        y = torch.exp(self.data)
        return Tensor._new(y, (self,), lambda g: (g * y,))

    def tanh(self):
        y = torch.tanh(self.data)
        return Tensor._new(y, (self,), lambda g: (g * (1 - y * y),))

    def backward(self, grad=None):
        pending = {id(self): torch.ones_like(self.data) if grad is None else grad}
        heap = [(-self.depth, next(_tiebreak), self)]
        queued = {id(self)}
        while heap:
            _, _, node = heapq.heappop(heap)
            g = pending.pop(id(node))
            if node._vjp is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for p, gp in zip(node._parents, node._vjp(g)):
                if not p.requires_grad:
                    continue
                pending[id(p)] = pending[id(p)] + gp if id(p) in pending else gp
                if id(p) not in queued:
                    queued.add(id(p))
                    heapq.heappush(heap, (-p.depth, next(_tiebreak), p))
