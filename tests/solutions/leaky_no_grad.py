"""Every follow-up, but inside ``no_grad()`` results still record their inputs.

They report ``requires_grad=False`` as they should, yet keep references to
their parents, so inference under ``no_grad`` keeps the whole graph alive.
"""

import contextlib

import torch

_recording = True


@contextlib.contextmanager
def no_grad():
    global _recording
    previous, _recording = _recording, False
    try:
        yield
    finally:
        _recording = previous


def _unbroadcast(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._leaf = True
        self._parents = ()
        self._backward = None  # output gradient -> one gradient per parent

    def _result(self, data, parents, backward):
        out = Tensor(data, _recording and any(p.requires_grad for p in parents))
        out._leaf = False
        out._parents, out._backward = parents, backward  # the bug: recorded even when not recording
        return out

    def __add__(self, other):
        return self._result(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._result(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return self._result(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        x = self.data
        return self._result(x.sum(), (self,), lambda g: (g * torch.ones_like(x),))

    def cross_entropy(self, target):
        z = self.data
        rows = torch.arange(z.shape[0])
        shifted = z - z.max(dim=1, keepdim=True).values
        log_probs = shifted - shifted.exp().sum(dim=1, keepdim=True).log()

        def backward(g):
            d = log_probs.exp()
            d[rows, target] -= 1
            return (d * g / z.shape[0],)

        return self._result(-log_probs[rows, target].mean(), (self,), backward)

    def backward(self, grad=None):
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(_topological_order(self)):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._leaf:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for parent, pg in zip(t._parents, t._backward(g)):
                if parent.requires_grad:
                    pg = _unbroadcast(pg, parent.data.shape)
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
            # Consumed: dropping the record lets the intermediates be freed.
            t._parents, t._backward = (), None


def _topological_order(root):
    order, visited = [], {id(root)}
    stack = [(root, iter(root._parents))]
    while stack:
        t, parents = stack[-1]
        for p in parents:
            if id(p) not in visited:
                visited.add(id(p))
                stack.append((p, iter(p._parents)))
                break
        else:
            stack.pop()
            order.append(t)
    return order
