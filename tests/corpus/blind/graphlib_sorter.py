"""Autograd engine: ordering with graphlib.TopologicalSorter, gradients in a dict."""

from __future__ import annotations

import contextlib
import graphlib

import torch
import torch.nn.functional as F

_grad_enabled = True


@contextlib.contextmanager
def no_grad():
    global _grad_enabled
    previous, _grad_enabled = _grad_enabled, False
    try:
        yield
    finally:
        _grad_enabled = previous


def _unbroadcast(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    while g.dim() > len(shape):
        g = g.sum(dim=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(dim=axis, keepdim=True)
    return g


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: torch.Tensor | None = None
        self._inputs: tuple[Tensor, ...] = ()
        self._vjp = None  # upstream grad -> tuple of grads, one per input

    def _lift(self, other) -> Tensor:
        if isinstance(other, Tensor):
            return other
        return Tensor(torch.as_tensor(other, dtype=self.data.dtype))

    @staticmethod
    def _result(data, inputs, vjp) -> Tensor:
        needs = _grad_enabled and any(t.requires_grad for t in inputs)
        out = Tensor(data, requires_grad=needs)
        if needs:
            out._inputs = tuple(inputs)
            out._vjp = vjp
        return out

    # ---- core ----
    def __add__(self, other):
        other = self._lift(other)
        a, b = self.data.shape, other.data.shape
        return self._result(self.data + other.data, (self, other),
                            lambda g: (_unbroadcast(g, a), _unbroadcast(g, b)))

    __radd__ = __add__

    def __mul__(self, other):
        other = self._lift(other)
        x, y = self.data, other.data
        return self._result(x * y, (self, other),
                            lambda g: (_unbroadcast(g * y, x.shape), _unbroadcast(g * x, y.shape)))

    __rmul__ = __mul__

    def __matmul__(self, other):
        x, y = self.data, other.data
        return self._result(x @ y, (self, other), lambda g: (g @ y.T, x.T @ g))

    def relu(self):
        x = self.data
        return self._result(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        shape = self.data.shape
        return self._result(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    # ---- extensions ----
    def __neg__(self):
        return self._result(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-self._lift(other))

    def __rsub__(self, other):
        return self._lift(other) + (-self)

    def __truediv__(self, other):
        return self * self._lift(other) ** -1

    def __rtruediv__(self, other):
        return self._lift(other) * self ** -1

    def __pow__(self, p):
        x = self.data
        return self._result(x ** p, (self,), lambda g: (g * p * x ** (p - 1),))

    def exp(self):
        e = self.data.exp()
        return self._result(e, (self,), lambda g: (g * e,))

    def log(self):
        x = self.data
        return self._result(x.log(), (self,), lambda g: (g / x,))

    def tanh(self):
        t = self.data.tanh()
        return self._result(t, (self,), lambda g: (g * (1 - t * t),))

    def sigmoid(self):
        s = torch.sigmoid(self.data)
        return self._result(s, (self,), lambda g: (g * s * (1 - s),))

    def mean(self):
        n = self.data.numel()
        return self.sum() * (1.0 / n)

    @property
    def T(self):
        return self._result(self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, shape):
        old = self.data.shape
        return self._result(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def maximum(self, other):
        x, y = self.data, other.data
        wa = (x > y).to(x.dtype) + 0.5 * (x == y).to(x.dtype)
        return self._result(torch.maximum(x, y), (self, other), lambda g: (g * wa, g * (1 - wa)))

    def max_pool2d(self, k):
        out, idx = F.max_pool2d(self.data, k, return_indices=True)
        shape = self.data.shape

        def vjp(g):
            flat = torch.zeros(shape[0], shape[1], shape[2] * shape[3], dtype=g.dtype)
            flat.scatter_add_(2, idx.flatten(2), g.flatten(2))
            return (flat.reshape(shape),)

        return self._result(out, (self,), vjp)

    def avg_pool2d(self, k):
        shape = self.data.shape

        def vjp(g):
            full = torch.zeros(shape, dtype=g.dtype)
            h, w = g.shape[2] * k, g.shape[3] * k
            full[:, :, :h, :w] = g.repeat_interleave(k, 2).repeat_interleave(k, 3) / (k * k)
            return (full,)

        return self._result(F.avg_pool2d(self.data, k), (self,), vjp)

    def conv2d(self, weight):
        x, w = self.data, weight.data
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        cols = F.unfold(x, (kh, kw))
        ho, wo = h - kh + 1, wd - kw + 1
        out = (w.reshape(o, -1) @ cols).reshape(n, o, ho, wo)

        def vjp(g):
            g2 = g.reshape(n, o, -1)
            gw = (g2 @ cols.transpose(1, 2)).sum(0).reshape(w.shape)
            gx = F.fold(w.reshape(o, -1).T @ g2, (h, wd), (kh, kw))
            return gx, gw

        return self._result(out, (self, weight), vjp)

    def __getitem__(self, ids):
        shape = self.data.shape

        def vjp(g):
            full = torch.zeros(shape, dtype=g.dtype)
            full.index_add_(0, ids.reshape(-1), g.reshape(-1, *shape[1:]))
            return (full,)

        return self._result(self.data[ids], (self,), vjp)

    def batch_norm(self, eps=1e-5):
        x = self.data
        n = x.shape[0]
        mu = x.mean(0)
        inv = (x.var(0, unbiased=False) + eps).rsqrt()
        xhat = (x - mu) * inv

        def vjp(g):
            return (inv / n * (n * g - g.sum(0) - xhat * (g * xhat).sum(0)),)

        return self._result(xhat, (self,), vjp)

    def cross_entropy(self, target):
        x = self.data
        n = x.shape[0]
        logp = x - x.logsumexp(dim=1, keepdim=True)
        loss = -logp[torch.arange(n), target].mean()

        def vjp(g):
            d = logp.exp()
            d[torch.arange(n), target] -= 1
            return (g * d / n,)

        return self._result(loss, (self,), vjp)

    # ---- backward ----
    def backward(self, grad: torch.Tensor | None = None) -> None:
        sorter = graphlib.TopologicalSorter()
        nodes = {id(self): self}
        stack = [self]
        while stack:
            node = stack.pop()
            sorter.add(id(node))
            for parent in node._inputs:
                # an output must be finished before its inputs: edges run output -> input
                sorter.add(id(parent), id(node))
                if id(parent) not in nodes:
                    nodes[id(parent)] = parent
                    stack.append(parent)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for key in sorter.static_order():
            node = nodes[key]
            g = grads.pop(key, None)
            if g is None:
                continue
            if node._vjp is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for parent, pg in zip(node._inputs, node._vjp(g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
            node._inputs, node._vjp = (), None
