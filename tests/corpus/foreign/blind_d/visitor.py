"""Autograd with the backward rules in a visitor.

A result records only its op name and inputs; ``GradientVisitor`` holds one
``visit_<op>`` method per op. The graph is ordered by an explicit-stack
post-order walk (each frame remembers the next input to look at).
Core, broadcasting, backward(grad), mean, .T, reshape.
"""
from __future__ import annotations

import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = None
        self.inputs = ()
        self.attrs = {}

    def _derive(self, data, op, *inputs, **attrs):
        out = Tensor(data, requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out.op, out.inputs, out.attrs = op, inputs, attrs
        return out

    def __add__(self, other):
        return self._derive(self.data + other.data, "add", self, other)

    def __mul__(self, other):
        return self._derive(self.data * other.data, "mul", self, other)

    def __matmul__(self, other):
        return self._derive(self.data @ other.data, "matmul", self, other)

    def relu(self):
        return self._derive(torch.relu(self.data), "relu", self)

    def sum(self):
        return self._derive(self.data.sum(), "sum", self)

    def mean(self):
        return self._derive(self.data.mean(), "mean", self)

    @property
    def T(self):
        return self._derive(self.data.T, "transpose", self)

    def reshape(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        return self._derive(self.data.reshape(shape), "reshape", self)

    def backward(self, grad=None):
        order, seen = [], {id(self)}
        frames = [[self, 0]]
        while frames:
            frame = frames[-1]
            node, i = frame
            if i < len(node.inputs):
                frame[1] += 1
                child = node.inputs[i]
                if id(child) not in seen:
                    seen.add(id(child))
                    frames.append([child, 0])
            else:
                frames.pop()
                order.append(node)
        visitor = GradientVisitor()
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node.op is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for x, gx in zip(node.inputs, visitor.visit(node, g)):
                if x.requires_grad:
                    grads[id(x)] = grads[id(x)] + gx if id(x) in grads else gx


def _unbroadcast(g, shape):
    extra = g.dim() - len(shape)
    if extra > 0:
        g = g.sum(dim=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    return g


class GradientVisitor:
    def visit(self, node, g):
        return getattr(self, "visit_" + node.op)(node, g)

    def visit_add(self, node, g):
        a, b = node.inputs
        return _unbroadcast(g, a.data.shape), _unbroadcast(g, b.data.shape)

    def visit_mul(self, node, g):
        a, b = node.inputs
        return _unbroadcast(g * b.data, a.data.shape), _unbroadcast(g * a.data, b.data.shape)

    def visit_matmul(self, node, g):
        a, b = node.inputs
        return g @ b.data.T, a.data.T @ g

    def visit_relu(self, node, g):
        (a,) = node.inputs
        return (torch.where(a.data > 0, g, torch.zeros_like(g)),)

    def visit_sum(self, node, g):
        (a,) = node.inputs
        return (torch.ones_like(a.data) * g,)

    def visit_mean(self, node, g):
        (a,) = node.inputs
        return (torch.ones_like(a.data) * g / a.data.shape[0],)

    def visit_transpose(self, node, g):
        return (g.T,)

    def visit_reshape(self, node, g):
        (a,) = node.inputs
        return (g.reshape(a.data.shape),)
