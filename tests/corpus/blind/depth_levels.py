"""Each result records its depth (1 + the deepest input); backward buckets the reachable
nodes by depth and runs the buckets from deepest to shallowest, a valid reverse order."""

from collections import defaultdict

import torch


def _back_to(g, shape):
    if g.shape != shape:
        g = g.sum_to_size(shape) if len(shape) else g.sum()
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.depth = 0
        self.local = []     # [(input, vjp)]

    def _new(self, data, *local):
        local = [(t, f) for t, f in local if t.requires_grad]
        out = Tensor(data, requires_grad=bool(local))
        if local:
            out.local = local
            out.depth = 1 + max(t.depth for t, _ in local)
        return out

    def _n(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._n(o)
        return self._new(self.data + o.data, (self, lambda g: _back_to(g, self.data.shape)),
                         (o, lambda g: _back_to(g, o.data.shape)))

    def __mul__(self, o):
        o = self._n(o)
        return self._new(self.data * o.data, (self, lambda g: _back_to(g * o.data, self.data.shape)),
                         (o, lambda g: _back_to(g * self.data, o.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, o):
        return self._new(self.data @ o.data, (self, lambda g: g @ o.data.T), (o, lambda g: self.data.T @ g))

    def relu(self):
        return self._new(self.data.relu(), (self, lambda g: g * (self.data > 0)))

    def sum(self):
        return self._new(self.data.sum(), (self, lambda g: torch.ones_like(self.data) * g))

    def __neg__(self):
        return self._new(-self.data, (self, lambda g: -g))

    def __sub__(self, o):
        o = self._n(o)
        return self._new(self.data - o.data, (self, lambda g: _back_to(g, self.data.shape)),
                         (o, lambda g: _back_to(-g, o.data.shape)))

    def __rsub__(self, o):
        return self._n(o) - self

    def __truediv__(self, o):
        o = self._n(o)
        return self._new(self.data / o.data,
                         (self, lambda g: _back_to(g / o.data, self.data.shape)),
                         (o, lambda g: _back_to(g * self.data / o.data ** 2, o.data.shape)))

    def __rtruediv__(self, o):
        return self._n(o) / self

    def backward(self, grad=None):
        levels = defaultdict(list)
        seen, stack = {id(self)}, [self]
        while stack:
            t = stack.pop()
            levels[t.depth].append(t)
            for p, _ in t.local:
                if id(p) not in seen:
                    seen.add(id(p))
                    stack.append(p)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for depth in sorted(levels, reverse=True):
            for t in levels[depth]:
                g = grads.pop(id(t), None)
                if g is None:
                    continue
                if not t.local:
                    if t.requires_grad:
                        t.grad = g.clone() if t.grad is None else t.grad + g
                    continue
                for p, f in t.local:
                    pg = f(g)
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
                t.local = []
