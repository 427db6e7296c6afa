import torch
from contextlib import contextmanager

_ON = [True]
_GRADS = {}  # id(tensor) -> gradient flowing into it during backward


@contextmanager
def no_grad():
    old = _ON[0]
    _ON[0] = False
    try:
        yield
    finally:
        _ON[0] = old


def _red(g, shape):
    if g.shape == shape:
        return g
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, s in enumerate(shape):
        if s == 1:
            g = g.sum(i, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad = data, requires_grad, None
        self.src, self.fn = (), None

    def _out(self, data, src, fn):
        t = Tensor(data)
        if _ON[0] and any(s.requires_grad for s in src):
            t.requires_grad, t.src, t.fn = True, src, fn
        return t

    def __add__(self, o):
        a, b = self.data.shape, o.data.shape
        return self._out(self.data + o.data, (self, o), lambda g: (_red(g, a), _red(g, b)))

    def __mul__(self, o):
        x, y = self.data, o.data
        return self._out(x * y, (self, o), lambda g: (_red(g * y, x.shape), _red(g * x, y.shape)))

    def __matmul__(self, o):
        x, y = self.data, o.data
        return self._out(x @ y, (self, o), lambda g: (g @ y.T, x.T @ g))

    def relu(self):
        m = self.data > 0
        return self._out(self.data * m, (self,), lambda g: (g * m,))

    def sum(self):
        s = self.data.shape
        return self._out(self.data.sum(), (self,), lambda g: (g * torch.ones(s, dtype=g.dtype),))

    def exp(self):
        e = self.data.exp()
        return self._out(e, (self,), lambda g: (g * e,))

    def tanh(self):
        t = self.data.tanh()
        return self._out(t, (self,), lambda g: (g * (1 - t * t),))

    @property
    def T(self):
        return self._out(self.data.T, (self,), lambda g: (g.T,))

    def backward(self, grad=None):
        topo, seen, st = [], {id(self)}, [(self, 0)]
        while st:
            t, i = st.pop()
            if i < len(t.src):
                st.append((t, i + 1))
                s = t.src[i]
                if s.requires_grad and id(s) not in seen:
                    seen.add(id(s))
                    st.append((s, 0))
            else:
                topo.append(t)
        k0 = id(self)
        g0 = torch.ones_like(self.data) if grad is None else grad
        _GRADS[k0] = _GRADS[k0] + g0 if k0 in _GRADS else g0
        for t in reversed(topo):
            k = id(t)
            if k not in _GRADS:
                continue
            if t.fn is None:
                g = _GRADS[k]
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            g = _GRADS.pop(k)
            for s, gs in zip(t.src, t.fn(g)):
                if s.requires_grad:
                    _GRADS[id(s)] = _GRADS[id(s)] + gs if id(s) in _GRADS else gs
            t.src, t.fn = (), None
