"""Autograd with a compact ``__slots__`` Tensor.

A result stores its inputs and a ``_grad_fn`` (upstream gradient -> input
gradients). Iterative DFS (a stack of input iterators) so deep chains work.
Core, backward(grad), deep graphs, -a, a - b, .T, reshape, and Python numbers
with +, * and -.
"""
from __future__ import annotations

import torch


class Tensor:
    __slots__ = ("data", "requires_grad", "grad", "_inputs", "_grad_fn")

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._grad_fn = None

    def _const(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.full_like(self.data, float(x)))

    @staticmethod
    def _op(data, inputs, grad_fn):
        out = Tensor(data, requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out._inputs = inputs
            out._grad_fn = grad_fn
        return out

    def __add__(self, other):
        other = self._const(other)
        if other.data.shape != self.data.shape:
            raise ValueError("no broadcasting")
        return Tensor._op(self.data + other.data, (self, other), lambda g: (g, g))

    def __radd__(self, other):
        return self._const(other) + self

    def __mul__(self, other):
        other = self._const(other)
        if other.data.shape != self.data.shape:
            raise ValueError("no broadcasting")
        a, b = self.data, other.data
        return Tensor._op(a * b, (self, other), lambda g: (g * b, g * a))

    def __rmul__(self, other):
        return self._const(other) * self

    def __neg__(self):
        return Tensor._op(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-self._const(other))

    def __rsub__(self, other):
        return self._const(other) + (-self)

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._op(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        on = self.data > 0
        return Tensor._op(torch.relu(self.data), (self,), lambda g: (g * on,))

    def sum(self):
        shape = self.data.shape
        return Tensor._op(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    @property
    def T(self):
        return Tensor._op(self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        before = self.data.shape
        return Tensor._op(self.data.reshape(shape), (self,), lambda g: (g.view(before),))

    def backward(self, grad=None):
        order, seen = [], {id(self)}
        stack = [(self, iter(self._inputs))]
        while stack:
            node, it = stack[-1]
            for x in it:
                if id(x) not in seen:
                    seen.add(id(x))
                    stack.append((x, iter(x._inputs)))
                    break
            else:
                stack.pop()
                order.append(node)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node._grad_fn is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for x, gx in zip(node._inputs, node._grad_fn(g)):
                if x.requires_grad:
                    grads[id(x)] = grads[id(x)] + gx if id(x) in grads else gx
