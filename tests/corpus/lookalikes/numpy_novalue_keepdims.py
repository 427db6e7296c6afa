"""A correct core engine whose ``sum`` mirrors numpy's signature, ``keepdims=np._NoValue`` included.

``np._NoValue`` is numpy's "argument not given" marker: a private name, but no
memory access.
"""

import numpy as np
import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._rule = None

    def _child(self, data, parents, rule):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._rule = parents, rule
        return out

    def __add__(self, other):
        return self._child(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._child(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._child(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        mask = self.data > 0
        return self._child(self.data * mask, (self,), lambda g: (g * mask,))

    def sum(self, axis=None, keepdims=np._NoValue):
        keep = False if keepdims is np._NoValue else bool(keepdims)
        x = self.data
        if axis is None:
            return self._child(x.sum(), (self,), lambda g: (g.expand_as(x),))
        return self._child(x.sum(axis, keepdim=keep), (self,),
                           lambda g: ((g if keep else g.unsqueeze(axis)).expand_as(x),))

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
        grads = {id(self): torch.ones_like(self.data)}
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
            t._parents, t._rule = (), None
