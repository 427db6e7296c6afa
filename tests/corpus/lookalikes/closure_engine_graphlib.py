"""A correct core engine that orders its graph with the standard library's ``graphlib``.

``graphlib.TopologicalSorter`` gives the order; ``operator.attrgetter`` reads
plain attributes; ``math.prod`` counts elements for a debug summary.
"""

import graphlib
import math
import operator

import torch

_parents_of = operator.attrgetter("_parents")


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._backward = None

    def size_summary(self):
        return f"{math.prod(self.data.shape)} elements"

    def _result(self, data, parents, backward):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._backward = parents, backward
        return out

    def __add__(self, other):
        return self._result(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._result(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return self._result(x.relu(), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        x = self.data
        return self._result(x.sum(), (self,), lambda g: (g * torch.ones_like(x),))

    def backward(self):
        nodes, todo = {id(self): self}, [self]
        graph = {}
        while todo:
            t = todo.pop()
            graph[id(t)] = [id(p) for p in _parents_of(t)]
            for p in _parents_of(t):
                if id(p) not in nodes:
                    nodes[id(p)] = p
                    todo.append(p)
        order = list(graphlib.TopologicalSorter(graph).static_order())  # parents before children
        grads = {id(self): torch.ones_like(self.data)}
        for key in reversed(order):
            t = nodes[key]
            g = grads.pop(key, None)
            if g is None or not t.requires_grad:
                continue
            if t._backward is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t._parents, t._backward(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
