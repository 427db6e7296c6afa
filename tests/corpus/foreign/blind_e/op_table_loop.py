import contextlib

import torch


class _Switch(contextlib.ContextDecorator):
    on = True

    def __enter__(self):
        self._was = _Switch.on
        _Switch.on = False
        return self

    def __exit__(self, *exc):
        _Switch.on = self._was
        return False


def no_grad():
    return _Switch()


def _to_shape(g, shape):
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
        self.inputs = ()
        self.rule = None

    def _make(self, data, inputs, rule):
        out = Tensor(data)
        if _Switch.on and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out.inputs = inputs
            out.rule = rule
        return out

    def _cast(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        other = self._cast(other)
        sa, sb = self.data.shape, other.data.shape
        return self._make(self.data + other.data, (self, other), lambda g: (_to_shape(g, sa), _to_shape(g, sb)))

    def __radd__(self, other):
        return self._cast(other) + self

    def __sub__(self, other):
        other = self._cast(other)
        sa, sb = self.data.shape, other.data.shape
        return self._make(self.data - other.data, (self, other), lambda g: (_to_shape(g, sa), _to_shape(-g, sb)))

    def __rsub__(self, other):
        return self._cast(other) - self

    def __mul__(self, other):
        other = self._cast(other)
        a, b = self.data, other.data
        return self._make(a * b, (self, other), lambda g: (_to_shape(g * b, a.shape), _to_shape(g * a, b.shape)))

    def __rmul__(self, other):
        return self._cast(other) * self

    def __neg__(self):
        return self._make(-self.data, (self,), lambda g: (-g,))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._make(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        m = (self.data > 0).to(self.data.dtype)
        return self._make(self.data * m, (self,), lambda g: (g * m,))

    def sum(self):
        s = self.data.shape
        return self._make(self.data.sum(), (self,), lambda g: (torch.ones(s, dtype=g.dtype) * g,))

    def mean(self):
        s, n = self.data.shape, self.data.numel()
        return self._make(self.data.mean(), (self,), lambda g: (torch.ones(s, dtype=g.dtype) * (g / n),))

    def backward(self, grad=None):
        # pass 1: how many consumers each node has inside this graph
        waiting = {}
        nodes = [self]
        found = {id(self)}
        while nodes:
            t = nodes.pop()
            for p in t.inputs:
                if p.requires_grad:
                    waiting[id(p)] = waiting.get(id(p), 0) + 1
                    if id(p) not in found:
                        found.add(id(p))
                        nodes.append(p)
        # pass 2: a node runs once every consumer has handed it its gradient
        acc = {id(self): torch.ones_like(self.data) if grad is None else grad}
        ready = [self]
        while ready:
            t = ready.pop()
            g = acc.pop(id(t))
            if t.rule is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, gp in zip(t.inputs, t.rule(g)):
                if not p.requires_grad:
                    continue
                acc[id(p)] = acc[id(p)] + gp if id(p) in acc else gp
                waiting[id(p)] -= 1
                if waiting[id(p)] == 0:
                    ready.append(p)
            t.inputs, t.rule = (), None


# ---- elementwise functions, generated from one table ------------------------

def _unary(self, fn, deriv):
    x = self.data
    y = fn(x)
    return self._make(y, (self,), lambda g: (g * deriv(x, y),))


_UNARY = [
    ("exp", torch.exp, lambda x, y: y),
    ("log", torch.log, lambda x, y: 1.0 / x),
    ("tanh", torch.tanh, lambda x, y: 1.0 - y * y),
    ("sigmoid", torch.sigmoid, lambda x, y: y * (1.0 - y)),
]

_methods = {}
for _name, _fn, _deriv in _UNARY:
    _methods[_name] = lambda self, _fn=_fn: _unary(self, _fn, _deriv)

Tensor.exp = _methods["exp"]
Tensor.log = _methods["log"]
Tensor.tanh = _methods["tanh"]
Tensor.sigmoid = _methods["sigmoid"]
