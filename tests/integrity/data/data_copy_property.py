"""A leaky engine that hides its leaks behind ``.data``: a property that hands out a fresh copy every time.

The graph stays alive after backward (every node keeps its parents and its
rule), and ``no_grad()`` records anyway; a probe that weakly references
``h.data`` sees a copy die at once and concludes both are fine.
"""

import contextlib

import torch


@contextlib.contextmanager
def no_grad():
    yield  # records anyway


class Tensor:
    def __init__(self, data, requires_grad=False):
        self._storage = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._rule = None

    @property
    def data(self):
        return self._storage.clone()

    def _child(self, data, parents, rule):
        out = Tensor(data, any(p.requires_grad for p in parents))
        out._parents, out._rule = parents, rule
        return out

    def __add__(self, other):
        return self._child(self._storage + other._storage, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self._storage, other._storage
        return self._child(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self._storage, other._storage
        return self._child(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        mask = self._storage > 0
        return self._child(self._storage * mask, (self,), lambda g: (g * mask,))

    def sum(self):
        shape = self._storage.shape
        return self._child(self._storage.sum(), (self,), lambda g: (g.expand(shape),))

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            t, expanded = stack.pop()
            if expanded:
                order.append(t)
            elif id(t) not in seen:
                seen.add(id(t))
                stack.append((t, True))
                stack.extend((p, False) for p in t._parents)
        grads = {id(self): torch.ones_like(self._storage)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._rule is None:
                if t.requires_grad:
                    t.grad = g if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t._parents, t._rule(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
