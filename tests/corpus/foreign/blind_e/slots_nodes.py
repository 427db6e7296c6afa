from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(slots=True)
class _Rec:
    parents: tuple
    pullback: Callable


@dataclass(slots=True)
class _Frame:
    node: object
    next_parent: int = 0


class _Flags:
    __slots__ = ()
    grad_enabled = True


class no_grad:
    __slots__ = ("prev",)

    def __enter__(self):
        self.prev = _Flags.grad_enabled
        _Flags.grad_enabled = False
        return self

    def __exit__(self, *exc):
        _Flags.grad_enabled = self.prev
        return False


def _debroadcast(g, shape):
    while g.ndim > len(shape):
        g = g.sum(0)
    for ax, size in enumerate(shape):
        if size == 1 and g.shape[ax] != 1:
            g = g.sum(ax, keepdim=True)
    return g


class Tensor:
    __slots__ = ("data", "requires_grad", "grad", "_rec", "__weakref__")

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._rec = None

    @staticmethod
    def _new(data, parents, pullback):
        t = Tensor(data)
        if _Flags.grad_enabled and any(p.requires_grad for p in parents):
            t.requires_grad = True
            t._rec = _Rec(parents, pullback)
        return t

    # core
    def __add__(self, other):
        sa, sb = self.data.shape, other.data.shape
        return Tensor._new(self.data + other.data, (self, other),
                           lambda g: (_debroadcast(g, sa), _debroadcast(g, sb)))

    def __mul__(self, other):
        a, b = self.data, other.data
        return Tensor._new(a * b, (self, other),
                           lambda g: (_debroadcast(g * b, a.shape), _debroadcast(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._new(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        keep = self.data > 0
        return Tensor._new(self.data.relu(), (self,), lambda g: (g * keep,))

    def sum(self):
        shape = self.data.shape
        return Tensor._new(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    # extensions
    def max_pool2d(self, k):
        x = self.data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        win = (x[:, :, :ho * k, :wo * k]
               .reshape(n, c, ho, k, wo, k)
               .permute(0, 1, 2, 4, 3, 5)
               .reshape(n, c, ho, wo, k * k))
        out, arg = win.max(dim=-1)

        def pullback(g):
            dr, dc = arg % k, arg // k
            ni, ci, hi, wi = torch.meshgrid(torch.arange(n), torch.arange(c), torch.arange(ho),
                                            torch.arange(wo), indexing="ij")
            gx = torch.zeros_like(x)
            gx.index_put_((ni, ci, hi * k + dr, wi * k + dc), g, accumulate=True)
            return (gx,)

        return Tensor._new(out, (self,), pullback)

    def __getitem__(self, ids):
        table = self.data

        def pullback(g):
            gt = torch.zeros_like(table)
            gt.index_add_(0, ids.reshape(-1), g.reshape(-1, *table.shape[1:]))
            return (gt,)

        return Tensor._new(table[ids], (self,), pullback)

    def batch_norm(self, eps=1e-5):
        x = self.data
        n = x.shape[0]
        mu = x.mean(0, keepdim=True)
        var = x.var(0, unbiased=False, keepdim=True)
        inv = torch.rsqrt(var + eps)
        xhat = (x - mu) * inv

        def pullback(g):
            return (inv * (g - g.mean(0, keepdim=True) - xhat * (g * xhat).mean(0, keepdim=True)),)

        return Tensor._new(xhat, (self,), pullback)

    # backward
    def backward(self, grad=None):
        order = []
        visited = {id(self)}
        frames = [_Frame(self)]
        while frames:
            f = frames[-1]
            parents = f.node._rec.parents if f.node._rec is not None else ()
            if f.next_parent < len(parents):
                p = parents[f.next_parent]
                f.next_parent += 1
                if p.requires_grad and id(p) not in visited:
                    visited.add(id(p))
                    frames.append(_Frame(p))
            else:
                frames.pop()
                order.append(f.node)

        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            rec = node._rec
            if rec is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for p, gp in zip(rec.parents, rec.pullback(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + gp if id(p) in grads else gp
            node._rec = None
