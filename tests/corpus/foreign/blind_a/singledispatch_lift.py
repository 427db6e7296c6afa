"""Tiny reverse-mode autograd.

Operands are normalised with ``functools.singledispatch``: a Python number, a
raw ``torch.Tensor`` or a ``Tensor`` all become a ``Tensor`` through ``lift``,
so every binary op has one code path.
"""
from __future__ import annotations

import contextlib
import functools
import numbers

import torch
import torch.nn.functional as F

_GRAD = [True]


@contextlib.contextmanager
def no_grad():
    _GRAD.append(False)
    try:
        yield
    finally:
        _GRAD.pop()


@functools.singledispatch
def lift(x, like=None):
    raise TypeError(f"cannot use {type(x).__name__} as an operand")


@lift.register
def _(x: numbers.Number, like=None):
    dtype = like.data.dtype if like is not None else torch.float64
    return Tensor(torch.tensor(x, dtype=dtype))


@lift.register
def _(x: torch.Tensor, like=None):
    return Tensor(x)


def reduce_like(g: torch.Tensor, shape) -> torch.Tensor:
    n_lead = g.dim() - len(shape)
    if n_lead:
        g = g.sum(dim=list(range(n_lead)))
    squash = [d for d, size in enumerate(shape) if size == 1 and g.shape[d] != 1]
    if squash:
        g = g.sum(dim=squash, keepdim=True)
    return g


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.srcs = ()
        self.pullback = None

    def __repr__(self):
        return f"Tensor({self.data.tolist()}, requires_grad={self.requires_grad})"

    @staticmethod
    def derived(value, srcs, pullback):
        t = Tensor(value)
        if _GRAD[-1] and any(s.requires_grad for s in srcs):
            t.requires_grad, t.srcs, t.pullback = True, srcs, pullback
        return t

    # core ------------------------------------------------------------------
    def __add__(self, other):
        other = lift(other, self)
        sa, sb = self.data.shape, other.data.shape
        return Tensor.derived(self.data + other.data, (self, other),
                              lambda g: (reduce_like(g, sa), reduce_like(g, sb)))

    def __radd__(self, other):
        return lift(other, self) + self

    def __mul__(self, other):
        other = lift(other, self)
        a, b = self.data, other.data
        return Tensor.derived(a * b, (self, other),
                              lambda g: (reduce_like(g * b, a.shape), reduce_like(g * a, b.shape)))

    def __rmul__(self, other):
        return lift(other, self) * self

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor.derived(a @ b, (self, other), lambda g: (g @ b.mT, a.mT @ g))

    def relu(self):
        keep = self.data > 0
        return Tensor.derived(self.data * keep, (self,), lambda g: (g * keep,))

    def sum(self):
        shape = self.data.shape
        return Tensor.derived(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("backward through a tensor that does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("implicit grad only for one-element outputs")
            grad = torch.ones(self.data.shape)

        # reverse post-order, iterative: (node, index of next src to visit)
        post, visited, stack = [], {self}, [(self, 0)]
        while stack:
            node, i = stack.pop()
            if i < len(node.srcs):
                stack.append((node, i + 1))
                s = node.srcs[i]
                if s.requires_grad and s not in visited:
                    visited.add(s)
                    stack.append((s, 0))
            else:
                post.append(node)

        acc = {self: grad}
        for node in reversed(post):
            g = acc.pop(node)
            node.grad = g.clone() if node.grad is None else node.grad + g
            if node.pullback is not None:
                for s, gs in zip(node.srcs, node.pullback(g)):
                    if s.requires_grad:
                        acc[s] = acc[s] + gs if s in acc else gs
            node.srcs, node.pullback = (), None

    # extensions ---------------------------------------------------------------
    def __neg__(self):
        return Tensor.derived(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-lift(other, self))

    def __rsub__(self, other):
        return lift(other, self) - self

    def __truediv__(self, other):
        other = lift(other, self)
        a, b = self.data, other.data
        return Tensor.derived(a / b, (self, other),
                              lambda g: (reduce_like(g / b, a.shape), reduce_like(-g * a / b.square(), b.shape)))

    def __rtruediv__(self, other):
        return lift(other, self) / self

    def __pow__(self, p):
        x = self.data
        return Tensor.derived(x.pow(p), (self,), lambda g: (g * p * x.pow(p - 1),))

    def exp(self):
        y = self.data.exp()
        return Tensor.derived(y, (self,), lambda g: (g * y,))

    def log(self):
        x = self.data
        return Tensor.derived(x.log(), (self,), lambda g: (g / x,))

    def tanh(self):
        y = self.data.tanh()
        return Tensor.derived(y, (self,), lambda g: (g * (1 - y.square()),))

    def sigmoid(self):
        y = self.data.sigmoid()
        return Tensor.derived(y, (self,), lambda g: (g * y * (1 - y),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return Tensor.derived(self.data.mean(), (self,), lambda g: (g.expand(shape) / n,))

    @property
    def T(self):
        return Tensor.derived(self.data.mT, (self,), lambda g: (g.mT,))

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)) else shape
        old = self.data.shape
        return Tensor.derived(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def maximum(self, other):
        other = lift(other, self)
        a, b = self.data, other.data
        wa = torch.where(a == b, 0.5, (a > b).to(a.dtype)).to(a.dtype)
        return Tensor.derived(torch.maximum(a, b), (self, other),
                              lambda g: (reduce_like(g * wa, a.shape), reduce_like(g * (1 - wa), b.shape)))

    def max_pool2d(self, k):
        x = self.data
        out, where = F.max_pool2d(x, k, return_indices=True)

        def pullback(g):
            return (F.max_unpool2d(g, where, k, output_size=x.shape[-2:]),)

        return Tensor.derived(out, (self,), pullback)

    def avg_pool2d(self, k):
        x = self.data
        h, w = x.shape[-2] // k * k, x.shape[-1] // k * k

        def pullback(g):
            gx = torch.zeros_like(x)
            gx[..., :h, :w] = F.interpolate(g, scale_factor=k, mode="nearest") / (k * k)
            return (gx,)

        return Tensor.derived(F.avg_pool2d(x, k), (self,), pullback)

    def __getitem__(self, ids):
        W = self.data

        def pullback(g):
            return (torch.zeros_like(W).index_put((ids,), g, accumulate=True),)

        return Tensor.derived(W[ids], (self,), pullback)

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        logp = F.log_softmax(z, dim=1)
        onehot = F.one_hot(target, z.shape[1]).to(z.dtype)

        def pullback(g):
            return (g * (logp.exp() - onehot) / n,)

        return Tensor.derived(-(logp * onehot).sum() / n, (self,), pullback)


@lift.register
def _(x: Tensor, like=None):
    return x
