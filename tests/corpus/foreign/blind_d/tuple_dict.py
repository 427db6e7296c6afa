"""Autograd where each result carries its node as a plain tuple.

``t._node = (op, inputs, saved)``. backward() gathers the nodes into a dict
keyed by id, counts each tensor's consumers edge by edge and runs Kahn's
algorithm from the output. Broadcasting, numbers as operands, -a and a - b
are supported.
"""
from __future__ import annotations

from collections import deque

import torch


def _reduce_to(g, shape):
    return g.sum_to_size(shape) if g.shape != shape else g


def _result(data, op, inputs, saved=()):
    out = Tensor(data, requires_grad=all(t.requires_grad for t in inputs))
    if out.requires_grad:
        out._node = (op, inputs, saved)
    return out


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._node = None

    def _wrap(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        other = self._wrap(other)
        return _result(self.data + other.data, "add", (self, other))

    def __radd__(self, other):
        return self._wrap(other) + self

    def __mul__(self, other):
        other = self._wrap(other)
        return _result(self.data * other.data, "mul", (self, other), (self.data, other.data))

    def __rmul__(self, other):
        return self._wrap(other) * self

    def __matmul__(self, other):
        return _result(self.data @ other.data, "matmul", (self, other), (self.data, other.data))

    def relu(self):
        return _result(torch.relu(self.data), "relu", (self,), (self.data > 0,))

    def sum(self):
        return _result(self.data.sum(), "sum", (self,))

    def __neg__(self):
        return _result(-self.data, "neg", (self,))

    def __sub__(self, other):
        return self + (-self._wrap(other))

    def __rsub__(self, other):
        return self._wrap(other) + (-self)

    def backward(self, grad=None):
        # collect nodes and count consumer edges
        nodes = {id(self): self}
        consumers = {id(self): 0}
        stack = [self]
        while stack:
            t = stack.pop()
            if t._node is None:
                continue
            for x in t._node[1]:
                if id(x) not in nodes:
                    nodes[id(x)] = x
                    consumers[id(x)] = 0
                    stack.append(x)
                consumers[id(x)] += 1

        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        ready = deque([self])
        while ready:
            t = ready.popleft()
            g = grads.pop(id(t))
            if t._node is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            op, inputs, saved = t._node
            if op == "add":
                parts = (_reduce_to(g, inputs[0].data.shape), _reduce_to(g, inputs[1].data.shape))
            elif op == "mul":
                a, b = saved
                parts = (_reduce_to(g * b, a.shape), _reduce_to(g * a, b.shape))
            elif op == "matmul":
                a, b = saved
                parts = (g @ b.T, a.T @ g)
            elif op == "relu":
                parts = (g * saved[0],)
            elif op == "sum":
                parts = (g.expand(inputs[0].data.shape).clone(),)
            elif op == "neg":
                parts = (-g,)
            else:
                raise RuntimeError(f"no backward rule for {op}")
            for x, gx in zip(inputs, parts):
                key = id(x)
                if x.requires_grad:
                    grads[key] = grads[key] + gx if key in grads else gx
                consumers[key] -= 1
                if consumers[key] == 0:
                    if key in grads:
                        ready.append(x)
