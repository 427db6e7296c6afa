"""Autograd with one subclass of Tensor per operation.

``Add``, ``Mul``, ``MatMul``, ``ReLU``, ``Sum`` and ``CrossEntropy`` each
compute their value in ``__init__`` and their inputs' gradients in
``grad_inputs``. Core, broadcasting, backward(grad), two passes, no_grad(),
cross_entropy.
"""
from __future__ import annotations

import torch


class _GradMode:
    enabled = True


class no_grad:
    def __enter__(self):
        self.saved_mode = _GradMode.enabled
        _GradMode.enabled = False

    def __exit__(self, *exc_info):
        _GradMode.enabled = self.saved_mode


def _fit(g, shape):
    return g if g.shape == shape else g.sum_to_size(shape)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.inputs = ()

    def _link(self, *inputs):
        """Called by every op subclass after computing ``self.data``."""
        if _GradMode.enabled and any(t.requires_grad for t in inputs):
            self.requires_grad = True
            self.inputs = inputs

    def grad_inputs(self, g):
        raise TypeError("a leaf has no inputs")

    def __add__(self, other):
        return Add(self, other)

    def __mul__(self, other):
        return Mul(self, other)

    def __matmul__(self, other):
        return MatMul(self, other)

    def relu(self):
        return ReLU(self)

    def sum(self):
        return Sum(self)

    def cross_entropy(self, target):
        return CrossEntropy(self, target)

    def backward(self, grad=None):
        order, done = [], set()
        todo = [(self, False)]
        while todo:
            node, finished = todo.pop()
            if finished:
                order.append(node)
                continue
            if id(node) in done:
                continue
            done.add(id(node))
            todo.append((node, True))
            todo.extend((x, False) for x in node.inputs)
        incoming = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(order):
            g = incoming.pop(id(node), None)
            if g is None:
                continue
            if not node.inputs:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for x, gx in zip(node.inputs, node.grad_inputs(g)):
                if x.requires_grad:
                    incoming[id(x)] = incoming[id(x)] + gx if id(x) in incoming else gx


class Add(Tensor):
    def __init__(self, a, b):
        super().__init__(a.data + b.data)
        self._link(a, b)

    def grad_inputs(self, g):
        a, b = self.inputs
        return _fit(g, a.data.shape), _fit(g, b.data.shape)


class Mul(Tensor):
    def __init__(self, a, b):
        super().__init__(a.data * b.data)
        self._link(a, b)

    def grad_inputs(self, g):
        a, b = self.inputs
        return _fit(g * b.data, a.data.shape), _fit(g * a.data, b.data.shape)


class MatMul(Tensor):
    def __init__(self, a, b):
        super().__init__(a.data @ b.data)
        self._link(a, b)

    def grad_inputs(self, g):
        a, b = self.inputs
        return g @ b.data.T, a.data.T @ g


class ReLU(Tensor):
    def __init__(self, a):
        super().__init__(torch.relu(a.data))
        self._link(a)

    def grad_inputs(self, g):
        return (g * (self.data > 0),)


class Sum(Tensor):
    def __init__(self, a):
        super().__init__(a.data.sum())
        self._link(a)

    def grad_inputs(self, g):
        return (g.expand(self.inputs[0].data.shape).clone(),)


class CrossEntropy(Tensor):
    """Mean over the batch of -log softmax(logits)[i, target[i]]."""

    def __init__(self, logits, target):
        x = logits.data
        rows = torch.arange(x.shape[0])
        m = x.max(dim=1, keepdim=True).values
        shifted = x - m
        lse = shifted.exp().sum(dim=1, keepdim=True).log()
        super().__init__((lse.squeeze(1) - x[rows, target]).mean())
        e = shifted.exp()
        self.softmax = e / e.sum(dim=1, keepdim=True)
        self.target = target
        self._link(logits)

    def grad_inputs(self, g):
        d = self.softmax.clone()
        d[torch.arange(d.shape[0]), self.target] -= 1
        return (g * d / d.shape[0],)
