"""A functional autograd core with a thin object wrapper on top.

The core is a set of pure functions on torch tensors.  Each returns the
forward value together with its VJP closure:

    value, vjp = mul(a, b)          # vjp(g) -> (grad_a, grad_b)

The ``Tensor`` class only stores a value, the VJP and its parents, and knows
how to walk the graph backwards.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch

VJP = Callable[[torch.Tensor], Tuple[torch.Tensor, ...]]


# ----------------------------------------------------------------------------
# functional core
# ----------------------------------------------------------------------------

def unbroadcast(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    while g.ndim > len(shape):
        g = g.sum(0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis, keepdim=True)
    return g


def add(a, b):
    return a + b, lambda g: (unbroadcast(g, a.shape), unbroadcast(g, b.shape))


def mul(a, b):
    return a * b, lambda g: (unbroadcast(g * b, a.shape), unbroadcast(g * a, b.shape))


def matmul(a, b):
    return a @ b, lambda g: (g @ b.T, a.T @ g)


def relu(a):
    mask = a > 0
    return torch.where(mask, a, torch.zeros_like(a)), lambda g: (g * mask,)


def total(a):
    return a.sum(), lambda g: (g.expand(a.shape).clone(),)


def average(a):
    n = a.numel()
    return a.mean(), lambda g: ((g / n).expand(a.shape).clone(),)


def exp(a):
    y = torch.exp(a)
    return y, lambda g: (g * y,)


def log(a):
    return torch.log(a), lambda g: (g / a,)


def take_rows(table, ids):
    def vjp(g):
        out = torch.zeros_like(table)
        out.index_put_((ids,), g, accumulate=True)
        return (out,)
    return table[ids], vjp


def cross_entropy(logits, target):
    n = logits.shape[0]
    z = logits - logits.max(dim=1, keepdim=True).values
    logp = z - z.exp().sum(dim=1, keepdim=True).log()
    loss = -logp[:, target].mean()

    def vjp(g):
        d = logp.exp()
        d[torch.arange(n), target] -= 1
        return (g * d / n,)

    return loss, vjp


# ----------------------------------------------------------------------------
# wrapper
# ----------------------------------------------------------------------------

class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: Optional[torch.Tensor] = None
        self._parents: Tuple[Tensor, ...] = ()
        self._vjp: Optional[VJP] = None

    @staticmethod
    def _lift(fn, *parents, **kw) -> "Tensor":
        value, vjp = fn(*(p.data for p in parents), **kw)
        out = Tensor(value)
        if any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents, out._vjp = parents, vjp
        return out

    def __add__(self, o): return Tensor._lift(add, self, o)
    def __mul__(self, o): return Tensor._lift(mul, self, o)
    def __matmul__(self, o): return Tensor._lift(matmul, self, o)
    def relu(self): return Tensor._lift(relu, self)
    def sum(self): return Tensor._lift(total, self)
    def mean(self): return Tensor._lift(average, self)
    def exp(self): return Tensor._lift(exp, self)
    def log(self): return Tensor._lift(log, self)
    def __getitem__(self, ids): return Tensor._lift(take_rows, self, ids=ids)
    def cross_entropy(self, target): return Tensor._lift(cross_entropy, self, target=target)

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        if grad is None:
            grad = torch.ones_like(self.data)
        # topological order, iteratively
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            t, post = stack.pop()
            if post:
                order.append(t)
            elif id(t) not in seen:
                seen.add(id(t))
                stack.append((t, True))
                stack.extend((p, False) for p in t._parents if p.requires_grad and id(p) not in seen)
        acc = {id(self): grad}
        for t in reversed(order):
            g = acc.pop(id(t), None)
            if g is None:
                continue
            if t._vjp is None:
                if t.requires_grad:
                    t.grad = g if t.grad is None else t.grad + g
                continue
            for p, gp in zip(t._parents, t._vjp(g)):
                if p.requires_grad:
                    acc[id(p)] = acc[id(p)] + gp if id(p) in acc else gp
