"""Autograd whose graph is made of namedtuples.

``Node(inputs, vjp)``: the tensors an op read and a function from the output's
gradient to one gradient per input. backward() walks the nodes with an explicit
stack into post-order, then sweeps it in reverse.
Core, broadcasting, backward(grad), two passes, -a, mean.
"""
from __future__ import annotations

from collections import namedtuple

import torch

Node = namedtuple("Node", ["inputs", "vjp"])


def _debroadcast(g, shape):
    if g.shape == shape:
        return g
    return g.sum_to_size(shape)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.node = None

    @classmethod
    def _from_op(cls, data, inputs, vjp):
        out = cls(data, requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out.node = Node(inputs, vjp)
        return out

    def __add__(self, other):
        sa, sb = self.data.shape, other.data.shape
        return Tensor._from_op(self.data + other.data, (self, other),
                               lambda g: (_debroadcast(g, sa), _debroadcast(g, sb)))

    def __mul__(self, other):
        a, b = self.data, other.data
        return Tensor._from_op(a * b, (self, other),
                               lambda g: (_debroadcast(g * b, a.shape), _debroadcast(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._from_op(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def __neg__(self):
        return Tensor._from_op(-self.data, (self,), lambda g: (-g,))

    def relu(self):
        pos = self.data > 0
        return Tensor._from_op(torch.relu(self.data), (self,), lambda g: (g * pos,))

    def sum(self):
        shape = self.data.shape
        return Tensor._from_op(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return Tensor._from_op(self.data.mean(), (self,), lambda g: (g.expand(shape) / n,))

    def backward(self, grad=None):
        grad = grad or torch.ones_like(self.data)
        post, seen, stack = [], set(), [(self, 0)]
        while stack:
            t, state = stack.pop()
            if state == 1:
                post.append(t)
            elif id(t) not in seen:
                seen.add(id(t))
                stack.append((t, 1))
                if t.node is not None:
                    stack.extend((x, 0) for x in t.node.inputs)
        upstream = {id(self): grad}
        for t in reversed(post):
            g = upstream.pop(id(t), None)
            if g is None:
                continue
            if t.node is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for x, gx in zip(t.node.inputs, t.node.vjp(g)):
                if x.requires_grad:
                    upstream[id(x)] = upstream[id(x)] + gx if id(x) in upstream else gx
