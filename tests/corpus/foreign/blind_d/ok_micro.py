"""Reverse-mode autograd, micrograd style.

Every result keeps its parents and a closure that maps the result's upstream
gradient to one gradient per parent. backward() sorts the graph iteratively
(post-order DFS), sweeps it in reverse, and frees the graph as it goes.
"""
from __future__ import annotations

import contextlib

import torch

_grad_enabled = True


@contextlib.contextmanager
def no_grad():
    global _grad_enabled
    previous = _grad_enabled
    _grad_enabled = False
    try:
        yield
    finally:
        _grad_enabled = previous


def _unbroadcast(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        if not isinstance(data, torch.Tensor):
            data = torch.as_tensor(data, dtype=torch.float64)
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._backward = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def _lift(self, x):
        if isinstance(x, Tensor):
            return x
        return Tensor(torch.tensor(x, dtype=self.data.dtype))

    @staticmethod
    def _make(data, parents, backward):
        out = Tensor(data)
        if _grad_enabled and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents = tuple(parents)
            out._backward = backward
        return out

    # ---- core -------------------------------------------------------------
    def __add__(self, other):
        other = self._lift(other)
        sa, sb = self.data.shape, other.data.shape
        return self._make(self.data + other.data, (self, other),
                          lambda g: (_unbroadcast(g, sa), _unbroadcast(g, sb)))

    def __radd__(self, other):
        return self._lift(other) + self

    def __mul__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return self._make(a * b, (self, other),
                          lambda g: (_unbroadcast(g * b, a.shape), _unbroadcast(g * a, b.shape)))

    def __rmul__(self, other):
        return self._lift(other) * self

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._make(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        mask = self.data > 0
        return self._make(torch.relu(self.data), (self,), lambda g: (g * mask,))

    def sum(self):
        shape = self.data.shape
        return self._make(self.data.sum(), (self,),
                          lambda g: (g.reshape(()).expand(shape).clone(),))

    # ---- extensions ---------------------------------------------------------
    def __neg__(self):
        return self._make(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-self._lift(other))

    def __rsub__(self, other):
        return self._lift(other) + (-self)

    def __truediv__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return self._make(a / b, (self, other),
                          lambda g: (_unbroadcast(g / b, a.shape),
                                     _unbroadcast(-g * a / (b * b), b.shape)))

    def __rtruediv__(self, other):
        return self._lift(other) / self

    def __pow__(self, p):
        a = self.data
        return self._make(a ** p, (self,), lambda g: (g * p * a ** (p - 1),))

    def exp(self):
        out = self.data.exp()
        return self._make(out, (self,), lambda g: (g * out,))

    def log(self):
        a = self.data
        return self._make(a.log(), (self,), lambda g: (g / a,))

    def tanh(self):
        out = self.data.tanh()
        return self._make(out, (self,), lambda g: (g * (1 - out * out),))

    def sigmoid(self):
        out = torch.sigmoid(self.data)
        return self._make(out, (self,), lambda g: (g * out * (1 - out),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return self._make(self.data.mean(), (self,),
                          lambda g: (g.reshape(()).expand(shape) / n,))

    # ---- follow-up: fused softmax cross-entropy -----------------------------
    def cross_entropy(self, target):
        x = self.data
        n = x.shape[0]
        rows = torch.arange(n)
        z = x - x.max(dim=1, keepdim=True).values
        logp = z - z.exp().sum(dim=1, keepdim=True).log()
        probs = logp.exp()
        loss = -logp[rows, target].mean()

        def backward(g):
            d = probs.clone()
            d[rows, target] -= 1
            return (d * (g / n),)

        return self._make(loss, (self,), backward)

    # ---- backward -------------------------------------------------------------
    def backward(self, grad=None):
        seed = torch.ones_like(self.data) if grad is None else grad
        order, seen = [], set()
        stack = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for p in node._parents:
                if id(p) not in seen:
                    stack.append((p, False))

        grads = {id(self): seed}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node._backward is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for p, pg in zip(node._parents, node._backward(g)):
                if p.requires_grad:
                    grads[id(p)] = pg if id(p) not in grads else grads[id(p)] + pg
            node._parents = ()
            node._backward = None
