"""A gradient whose values are whole numbers is stored as int64.

The values are right, but a gradient must have its tensor's dtype (float64 here):
an engine that seeds backward with an integer tensor ends up like this.
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
    """Sum a gradient back to the shape of the operand it belongs to."""
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
        self._parents = ()
        self._backward = None  # output gradient -> one gradient per parent

    def _result(self, data, parents, backward):
        out = Tensor(data, _recording and any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._backward = parents, backward
        return out

    @staticmethod
    def _lift(x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(float(x), dtype=torch.float64))

    def __add__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return self._result(a + b, (self, other), lambda g: (_unbroadcast(g, a.shape), _unbroadcast(g, b.shape)))

    __radd__ = __add__

    def __mul__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return self._result(a * b, (self, other),
                            lambda g: (_unbroadcast(g * b, a.shape), _unbroadcast(g * a, b.shape)))

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-self._lift(other))

    def __truediv__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return self._result(a / b, (self, other),
                            lambda g: (_unbroadcast(g / b, a.shape), _unbroadcast(-g * a / (b * b), b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return self._result(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def exp(self):
        e = self.data.exp()
        return self._result(e, (self,), lambda g: (g * e,))

    def log(self):
        x = self.data
        return self._result(x.log(), (self,), lambda g: (g / x,))

    def sum(self):
        x = self.data
        return self._result(x.sum(), (self,), lambda g: (g * torch.ones_like(x),))

    def mean(self):
        return self.sum() * (1.0 / self.data.numel())

    def backward(self, grad=None):
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(_topological_order(self)):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._backward is None:
                g = g.long() if bool((g == g.round()).all()) else g  # the bug: the dtype follows the values
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for parent, pg in zip(t._parents, t._backward(g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
            t._parents, t._backward = (), None  # passed on: the graph can be freed


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
