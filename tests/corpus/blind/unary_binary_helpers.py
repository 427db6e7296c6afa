"""Two helpers build every op: `_unary(fn, dfn)` and `_binary(fn, dfa, dfb)`, where the
derivative functions map (upstream, inputs..., output) to an input's gradient."""

import torch


def _fit(g, shape):
    while len(g.shape) > len(shape):
        g = g.sum(0)
    for axis in [i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1]:
        g = g.sum(axis, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._rules = ()

    def _coerce(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.as_tensor(x, dtype=self.data.dtype))

    def _unary(self, fn, dfn):
        y = fn(self.data)
        out = Tensor(y, requires_grad=True)
        out._parents = (self,)
        out._rules = (lambda g: dfn(g, self.data, y),)
        return out

    def _binary(self, other, fn, dfa, dfb):
        other = self._coerce(other)
        a, b = self.data, other.data
        y = fn(a, b)
        out = Tensor(y, requires_grad=True)
        out._parents = (self, other)
        out._rules = (lambda g: _fit(dfa(g, a, b, y), a.shape), lambda g: _fit(dfb(g, a, b, y), b.shape))
        return out

    def __add__(self, o):
        return self._binary(o, torch.add, lambda g, a, b, y: g, lambda g, a, b, y: g)

    def __mul__(self, o):
        return self._binary(o, torch.mul, lambda g, a, b, y: g * b, lambda g, a, b, y: g * a)

    __radd__, __rmul__ = __add__, __mul__

    def __sub__(self, o):
        return self._binary(o, torch.sub, lambda g, a, b, y: g, lambda g, a, b, y: -g)

    def __rsub__(self, o):
        return self._coerce(o) - self

    def __truediv__(self, o):
        return self._binary(o, torch.div, lambda g, a, b, y: g / b, lambda g, a, b, y: -g * y / b)

    def __rtruediv__(self, o):
        return self._coerce(o) / self

    def __matmul__(self, o):
        return self._binary(o, torch.matmul, lambda g, a, b, y: g @ b.T, lambda g, a, b, y: a.T @ g)

    def __neg__(self):
        return self._unary(torch.neg, lambda g, x, y: -g)

    def relu(self):
        return self._unary(torch.relu, lambda g, x, y: g * (x > 0))

    def sum(self):
        return self._unary(torch.sum, lambda g, x, y: g.expand_as(x).clone())

    def exp(self):
        return self._unary(torch.exp, lambda g, x, y: g * y)

    def tanh(self):
        return self._unary(torch.tanh, lambda g, x, y: g * (1 - y * y))

    def sigmoid(self):
        return self._unary(torch.sigmoid, lambda g, x, y: g * y * (1 - y))

    def backward(self, grad=None):
        order, marks = [], {}
        stack = [self]
        while stack:
            t = stack.pop()
            state = marks.get(id(t))
            if state == 2:
                continue
            if state == 1:
                marks[id(t)] = 2
                order.append(t)
                continue
            marks[id(t)] = 1
            stack.append(t)
            stack.extend(p for p in t._parents if marks.get(id(p)) is None)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if not t._parents:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, rule in zip(t._parents, t._rules):
                pg = rule(g)
                grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            t._parents, t._rules = (), ()
