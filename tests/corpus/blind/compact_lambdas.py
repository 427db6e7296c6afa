"""The compact whiteboard answer: one `_make` helper, every op a one-liner with lambdas."""

import torch


def reduce_grad(g, shape):
    # broadcasting added leading dims and stretched size-1 dims: undo both
    while g.dim() > len(shape):
        g = g.sum(-1)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad = data, requires_grad, None
        self.prev, self.fns = (), ()

    @staticmethod
    def _make(data, prev, fns):
        out = Tensor(data, any(p.requires_grad for p in prev))
        if out.requires_grad:
            out.prev, out.fns = prev, fns
        return out

    def _c(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(s, o):
        o = s._c(o)
        return Tensor._make(s.data + o.data, (s, o), (lambda g: reduce_grad(g, s.data.shape), lambda g: reduce_grad(g, o.data.shape)))

    def __mul__(s, o):
        o = s._c(o)
        return Tensor._make(s.data * o.data, (s, o), (lambda g: reduce_grad(g * o.data, s.data.shape), lambda g: reduce_grad(g * s.data, o.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(s, o):
        return Tensor._make(s.data @ o.data, (s, o), (lambda g: g @ o.data.T, lambda g: s.data.T @ g))

    def relu(s):
        return Tensor._make(s.data.relu(), (s,), (lambda g: g * (s.data > 0),))

    def sum(s):
        return Tensor._make(s.data.sum(), (s,), (lambda g: g * torch.ones_like(s.data),))

    def __neg__(s):
        return Tensor._make(-s.data, (s,), (lambda g: -g,))

    def __sub__(s, o):
        return s + (-s._c(o))

    def __rsub__(s, o):
        return s._c(o) + (-s)

    def backward(self, grad=None):
        topo, seen, stack = [], set(), [(self, 0)]
        while stack:
            t, i = stack.pop()
            if i == 0 and id(t) in seen:
                continue
            seen.add(id(t))
            if i < len(t.prev):
                stack += [(t, i + 1), (t.prev[i], 0)]
            else:
                topo.append(t)
        gs = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(topo):
            g = gs.pop(id(t), None)
            if g is None:
                continue
            if not t.prev:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, fn in zip(t.prev, t.fns):
                if p.requires_grad:
                    pg = fn(g)
                    gs[id(p)] = gs[id(p)] + pg if id(p) in gs else pg
            t.prev, t.fns = (), ()
