"""No explicit sort: backward counts how many times each tensor is used inside the graph
and a node fires (passes its gradient on) once every one of its uses has delivered."""

import torch


def _squash(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and g.size(i) != 1:
            g = g.sum(i, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._src = ()          # (input, rule) pairs

    def _link(self, data, *pairs):
        pairs = tuple((t, r) for t, r in pairs if t.requires_grad)
        out = Tensor(data, requires_grad=bool(pairs))
        out._src = pairs
        return out

    def _k(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._k(o)
        return self._link(self.data + o.data, (self, lambda g: _squash(g, self.data.shape)),
                          (o, lambda g: _squash(g, o.data.shape)))

    def __mul__(self, o):
        o = self._k(o)
        return self._link(self.data * o.data, (self, lambda g: _squash(g * o.data, self.data.shape)),
                          (o, lambda g: _squash(g * self.data, o.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, o):
        return self._link(self.data @ o.data, (self, lambda g: g @ o.data.T), (o, lambda g: self.data.T @ g))

    def relu(self):
        return self._link(self.data.relu(), (self, lambda g: g * (self.data > 0)))

    def sum(self):
        return self._link(self.data.sum(), (self, lambda g: g * torch.ones_like(self.data)))

    def __pow__(self, p):
        return self._link(self.data ** p, (self, lambda g: g * p * self.data ** p))

    def __truediv__(self, o):
        return self * self._k(o) ** -1

    def __rtruediv__(self, o):
        return self._k(o) * self ** -1

    def __neg__(self):
        return self * -1.0

    def __sub__(self, o):
        return self + -self._k(o)

    def __rsub__(self, o):
        return self._k(o) + -self

    def backward(self, grad=None):
        remaining, stack, seen = {}, [self], {id(self)}
        while stack:
            t = stack.pop()
            for p, _ in t._src:
                remaining[id(p)] = remaining.get(id(p), 0) + 1
                if id(p) not in seen:
                    seen.add(id(p))
                    stack.append(p)
        inbox = {id(self): torch.ones_like(self.data) if grad is None else grad}
        ready = [self]
        while ready:
            t = ready.pop()
            g = inbox.pop(id(t))
            if not t._src:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, rule in t._src:
                pg = rule(g)
                inbox[id(p)] = inbox[id(p)] + pg if id(p) in inbox else pg
                remaining[id(p)] -= 1
                if remaining[id(p)] == 0:
                    ready.append(p)
            t._src = ()
