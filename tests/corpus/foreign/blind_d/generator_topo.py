"""Autograd with a generator-based topological sort.

``_postorder(root)`` is a generator that yields every node after all of its
inputs, using an explicit stack of input iterators (no recursion). Each result
stores ``_parents`` and ``_vjp``. Core, backward(grad), two passes, exp, log,
sigmoid.
"""
from __future__ import annotations

import torch


def _postorder(root):
    seen = {id(root)}
    stack = [(root, iter(root._parents))]
    while stack:
        node, parents = stack[-1]
        for p in parents:
            if id(p) not in seen:
                seen.add(id(p))
                stack.append((p, iter(p._parents)))
                break
        else:
            stack.pop()
            yield node


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._vjp = None

    def _child(self, data, parents, vjp):
        child = Tensor(data, requires_grad=any(p.requires_grad for p in parents))
        if child.requires_grad:
            child._parents, child._vjp = parents, vjp
        return child

    def __add__(self, other):
        if self.data.shape != other.data.shape:
            raise ValueError("shapes must match")
        return self._child(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        if self.data.shape != other.data.shape:
            raise ValueError("shapes must match")
        x, y = self.data, other.data
        return self._child(x * y, (self, other), lambda g: (g * y, g * x))

    def __matmul__(self, other):
        x, y = self.data, other.data
        return self._child(x @ y, (self, other), lambda g: (g @ y.T, x.T @ g))

    def relu(self):
        m = self.data > 0
        return self._child(torch.relu(self.data), (self,), lambda g: (g * m,))

    def sum(self):
        shape = self.data.shape
        return self._child(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def exp(self):
        y = self.data.exp()
        return self._child(y, (self,), lambda g: (g * y,))

    def log(self):
        x = self.data
        return self._child(x.log(), (self,), lambda g: (g / x,))

    def sigmoid(self):
        s = torch.sigmoid(self.data)
        return self._child(s, (self,), lambda g: (g * s * (1 - s),))

    def backward(self, grad=None):
        order = list(_postorder(self))
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        if self._vjp is None and self.requires_grad:
            self.grad = grads[id(self)].clone() if self.grad is None else self.grad + grads[id(self)]
        for node in reversed(order):
            if node._vjp is None:
                continue
            g = grads.pop(id(node))
            for p, gp in zip(node._parents, node._vjp(g)):
                if p._vjp is not None:
                    grads[id(p)] = grads[id(p)] + gp if id(p) in grads else gp
                else:
                    p.grad = gp.clone() if p.grad is None else p.grad + gp
