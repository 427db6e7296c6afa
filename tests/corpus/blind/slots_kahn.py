"""Autograd with __slots__ tensors and Kahn's algorithm (in-degree counting) for the order."""

from collections import deque
from contextlib import contextmanager

import torch


class _Mode:
    enabled = True


@contextmanager
def no_grad():
    old = _Mode.enabled
    _Mode.enabled = False
    try:
        yield
    finally:
        _Mode.enabled = old


def _reduce_to(grad, shape):
    if grad.shape == shape:
        return grad
    return grad.sum_to_size(shape) if len(shape) else grad.sum()


class Tensor:
    __slots__ = ("data", "requires_grad", "grad", "parents", "backward_fn", "__weakref__")

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.parents = ()
        self.backward_fn = None

    def _child(self, data, parents, backward_fn):
        t = Tensor(data)
        if _Mode.enabled and any(p.requires_grad for p in parents):
            t.requires_grad = True
            t.parents = parents
            t.backward_fn = backward_fn
        return t

    def _as_tensor(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.full((), float(x), dtype=self.data.dtype))

    def __add__(self, other):
        other = self._as_tensor(other)
        return self._child(self.data + other.data, (self, other),
                           lambda g: (_reduce_to(g, self.data.shape), _reduce_to(g, other.data.shape)))

    __radd__ = __add__

    def __mul__(self, other):
        other = self._as_tensor(other)
        return self._child(self.data * other.data, (self, other),
                           lambda g: (_reduce_to(g * other.data, self.data.shape),
                                      _reduce_to(g * self.data, other.data.shape)))

    __rmul__ = __mul__

    def __matmul__(self, other):
        return self._child(self.data @ other.data, (self, other),
                           lambda g: (g @ other.data.mT, self.data.mT @ g))

    def relu(self):
        return self._child(self.data.relu(), (self,), lambda g: (g * (self.data > 0).to(g.dtype),))

    def sum(self):
        return self._child(self.data.sum(), (self,), lambda g: (g.expand_as(self.data).clone(),))

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-self._as_tensor(other))

    def __rsub__(self, other):
        return self._as_tensor(other) - self

    def exp(self):
        e = self.data.exp()
        return self._child(e, (self,), lambda g: (g * e,))

    def log(self):
        return self._child(self.data.log(), (self,), lambda g: (g / self.data,))

    def sigmoid(self):
        s = self.data.sigmoid()
        return self._child(s, (self,), lambda g: (g * s * (1.0 - s),))

    def cross_entropy(self, target):
        z = self.data - self.data.max(dim=1, keepdim=True).values
        log_softmax = z - z.exp().sum(dim=1, keepdim=True).log()
        rows = torch.arange(z.shape[0])
        n = z.shape[0]

        def back(g):
            d = log_softmax.exp()
            d[rows, target] -= 1.0
            return (d * (g / n),)

        return self._child(-log_softmax[rows, target].sum() / n, (self,), back)

    def backward(self, grad=None):
        # Kahn: count, for every node, how many of its consumers still owe it a gradient
        pending = {id(self): 0}
        nodes = [self]
        i = 0
        while i < len(nodes):
            for p in nodes[i].parents:
                if id(p) not in pending:
                    pending[id(p)] = 0
                    nodes.append(p)
                pending[id(p)] += 1
            i += 1
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        ready = deque([self])
        while ready:
            node = ready.popleft()
            g = grads.pop(id(node))
            if node.backward_fn is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for p, pg in zip(node.parents, node.backward_fn(g)):
                if p.requires_grad:
                    grads[id(p)] = pg if id(p) not in grads else grads[id(p)] + pg
                pending[id(p)] -= 1
                if pending[id(p)] == 0 and p.requires_grad:
                    ready.append(p)
            node.parents, node.backward_fn = (), None
