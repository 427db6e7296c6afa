"""Each op's backward rule is a generator: given the upstream gradient it yields
(input, gradient) pairs. The order is a reverse post-order found with an explicit stack."""

import contextlib

import torch

_no_grad_depth = 0


@contextlib.contextmanager
def no_grad():
    global _no_grad_depth
    _no_grad_depth += 1
    try:
        yield
    finally:
        _no_grad_depth -= 1


def _to_shape(g, shape):
    while g.ndim > len(shape):
        g = g.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._rule = None

    def _emit(self, data, inputs, rule):
        out = Tensor(data)
        if _no_grad_depth == 0 and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._inputs = inputs
            out._rule = rule
        return out

    def _t(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        a, b = self, self._t(other)

        def rule(g):
            yield a, _to_shape(g, a.data.shape)
            yield b, _to_shape(g, b.data.shape)
        return self._emit(a.data + b.data, (a, b), rule)

    def __sub__(self, other):
        a, b = self, self._t(other)

        def rule(g):
            yield a, _to_shape(g, a.data.shape)
            yield b, _to_shape(g, b.data.shape)
        return self._emit(a.data - b.data, (a, b), rule)

    def __rsub__(self, other):
        return self._t(other) - self

    def __mul__(self, other):
        a, b = self, self._t(other)

        def rule(g):
            yield a, _to_shape(g * b.data, a.data.shape)
            yield b, _to_shape(g * a.data, b.data.shape)
        return self._emit(a.data * b.data, (a, b), rule)

    __radd__, __rmul__ = __add__, __mul__

    def __neg__(self):
        def rule(g):
            yield self, -g
        return self._emit(-self.data, (self,), rule)

    def __matmul__(self, other):
        a, b = self, other

        def rule(g):
            yield a, g @ b.data.T
            yield b, a.data.T @ g
        return self._emit(a.data @ b.data, (a, b), rule)

    def relu(self):
        def rule(g):
            yield self, g * (self.data > 0)
        return self._emit(self.data.relu(), (self,), rule)

    def sum(self):
        def rule(g):
            yield self, g.expand(self.data.shape).clone()
        return self._emit(self.data.sum(), (self,), rule)

    def mean(self):
        n = self.data.numel()

        def rule(g):
            yield self, torch.full_like(self.data, 1.0 / n) * g
        return self._emit(self.data.mean(), (self,), rule)

    def backward(self, grad=None):
        order, visited, stack = [], set(), [(self, False)]
        while stack:
            t, done = stack.pop()
            if done:
                order.append(t)
            elif id(t) not in visited:
                visited.add(id(t))
                stack.append((t, True))
                stack.extend((p, False) for p in t._inputs if id(p) not in visited)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._rule is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in t._rule(g):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            t._inputs, t._rule = (), None
