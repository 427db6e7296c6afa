"""Shape-heavy engine (reshape, transpose, mean) over a `Node` record stored on each
result: Node(fn, parents). Order: reverse post-order from an iterative DFS."""

from collections import namedtuple

import torch

Node = namedtuple("Node", ["fn", "parents"])


def _unbroadcast(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.node = None

    def _from(self, data, fn, *parents):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out.node = Node(fn, parents)
        return out

    def _c(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._c(o)
        return self._from(self.data + o.data,
                          lambda g: (_unbroadcast(g, self.data.shape), _unbroadcast(g, o.data.shape)), self, o)

    def __mul__(self, o):
        o = self._c(o)
        return self._from(self.data * o.data,
                          lambda g: (_unbroadcast(g * o.data, self.data.shape),
                                     _unbroadcast(g * self.data, o.data.shape)), self, o)

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, o):
        return self._from(self.data @ o.data, lambda g: (g @ o.data.T, self.data.T @ g), self, o)

    def relu(self):
        return self._from(self.data.relu(), lambda g: (g * (self.data > 0),), self)

    def sum(self):
        return self._from(self.data.sum(), lambda g: (g * torch.ones_like(self.data),), self)

    def mean(self):
        return self._from(self.data.mean(), lambda g: (g * torch.ones_like(self.data) / self.data.numel(),), self)

    @property
    def T(self):
        return self._from(self.data.T, lambda g: (g.T,), self)

    def reshape(self, shape):
        return self._from(self.data.reshape(shape), lambda g: (g.reshape(shape),), self)

    def backward(self, grad=None):
        post, seen = [], set()
        stack = [(self, iter(self.node.parents if self.node else ()))]
        seen.add(id(self))
        while stack:
            t, it = stack[-1]
            p = next(it, None)
            if p is None:
                post.append(t)
                stack.pop()
            elif id(p) not in seen:
                seen.add(id(p))
                stack.append((p, iter(p.node.parents if p.node else ())))
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(post):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.node is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t.node.parents, t.node.fn(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            t.node = None
