"""Grad mode is thread-local (threading.local), like torch's; each result keeps a
`_backward(g)` closure returning gradients for `_prev`. Backward: Kahn's algorithm."""

import contextlib
import threading
from collections import deque

import torch

_mode = threading.local()


def _enabled():
    return getattr(_mode, "enabled", True)


@contextlib.contextmanager
def no_grad():
    prev = _enabled()
    _mode.enabled = False
    try:
        yield
    finally:
        _mode.enabled = prev


def _unbcast(g, shape):
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
        self._prev = ()
        self._backward = None

    def _wrap(self, data, prev, backward):
        out = Tensor(data)
        if _enabled() and any(p.requires_grad for p in prev):
            out.requires_grad, out._prev, out._backward = True, prev, backward
        return out

    def _num(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._num(o)
        return self._wrap(self.data + o.data, (self, o),
                          lambda g: (_unbcast(g, self.data.shape), _unbcast(g, o.data.shape)))

    def __mul__(self, o):
        o = self._num(o)
        return self._wrap(self.data * o.data, (self, o),
                          lambda g: (_unbcast(g * o.data, self.data.shape), _unbcast(g * self.data, o.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, o):
        return self._wrap(self.data @ o.data, (self, o), lambda g: (g @ o.data.T, self.data.T @ g))

    def relu(self):
        return self._wrap(self.data.relu(), (self,), lambda g: (g * (self.data > 0),))

    def sum(self):
        return self._wrap(self.data.sum(), (self,), lambda g: (g * torch.ones_like(self.data),))

    @property
    def T(self):
        return self._wrap(self.data.T, (self,), lambda g: (g,))

    def reshape(self, shape):
        return self._wrap(self.data.reshape(shape), (self,), lambda g: (g.reshape(self.data.shape),))

    def backward(self, grad=None):
        indegree, order_nodes, q = {id(self): 0}, [self], [self]
        while q:
            t = q.pop()
            for p in t._prev:
                if id(p) not in indegree:
                    indegree[id(p)] = 0
                    order_nodes.append(p)
                    q.append(p)
                indegree[id(p)] += 1
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        ready = deque([self])
        while ready:
            t = ready.popleft()
            g = grads.pop(id(t), None)
            if t._backward is None:
                if t.requires_grad and g is not None:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t._prev, t._backward(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
                indegree[id(p)] -= 1
                if indegree[id(p)] == 0:
                    ready.append(p)
            t._prev, t._backward = (), None
