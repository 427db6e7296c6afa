import contextlib
import itertools

import torch

# global switch used by no_grad()
_GRAD_ENABLED = True


@contextlib.contextmanager
def no_grad():
    global _GRAD_ENABLED
    prev, _GRAD_ENABLED = _GRAD_ENABLED, False
    try:
        yield
    finally:
        _GRAD_ENABLED = prev


def _unbroadcast(grad, shape):
    """np-style: sum grad over broadcast axes so it matches `shape`."""
    if grad.shape == shape:
        return grad
    ndim_extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(ndim_extra))) if ndim_extra > 0 else grad
    axes = tuple(ax for ax, n in enumerate(shape) if n == 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad


class Tensor:
    _ids = itertools.count()   # creation counter -> later nodes have larger ids

    def __init__(self, data, requires_grad=False):
        self.data = data if isinstance(data, torch.Tensor) else torch.as_tensor(data)
        self.requires_grad = requires_grad
        self.grad = None
        self._id = next(Tensor._ids)
        self._parents = ()
        self._backward = None

    def __repr__(self):
        return f"Tensor(shape={tuple(self.data.shape)}, requires_grad={self.requires_grad})"

    @property
    def shape(self):
        return self.data.shape

    # --------------------------------------------------------------- plumbing
    def _wrap(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.full((), float(x), dtype=self.data.dtype))

    def _new(self, data, parents):
        out = Tensor(data)
        out.requires_grad = _GRAD_ENABLED and any(p.requires_grad for p in parents)
        if out.requires_grad:
            out._parents = parents
        return out

    def _with(self, backward_fn):
        # only keep the closure (and with it the inputs) if we will need it
        if self.requires_grad:
            self._backward = backward_fn
        return self

    def _add_grad(self, g):
        if not self.requires_grad:
            return
        self.grad = g if self.grad is None else self.grad + g

    # ------------------------------------------------------------------- ops
    def __add__(self, other):
        other = self._wrap(other)
        out = self._new(self.data + other.data, (self, other))

        def _backward():
            self._add_grad(_unbroadcast(out.grad, self.shape))
            other._add_grad(_unbroadcast(out.grad, other.shape))
        return out._with(_backward)

    __radd__ = __add__

    def __mul__(self, other):
        other = self._wrap(other)
        out = self._new(self.data * other.data, (self, other))

        def _backward():
            self._add_grad(_unbroadcast(out.grad * other.data, self.shape))
            other._add_grad(_unbroadcast(out.grad * self.data, other.shape))
        return out._with(_backward)

    __rmul__ = __mul__

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-self._wrap(other))

    def __rsub__(self, other):
        return self._wrap(other) + (-self)

    def __truediv__(self, other):
        return self * self._wrap(other) ** -1

    def __rtruediv__(self, other):
        return self._wrap(other) * self ** -1

    def __pow__(self, p):
        out = self._new(self.data ** p, (self,))

        def _backward():
            self._add_grad(out.grad * p * self.data ** (p - 1))
        return out._with(_backward)

    def __matmul__(self, other):
        out = self._new(self.data @ other.data, (self, other))

        def _backward():
            self._add_grad(out.grad @ other.data.T)
            other._add_grad(self.data.T @ out.grad)
        return out._with(_backward)

    def relu(self):
        out = self._new(torch.clip(self.data, min=0), (self,))

        def _backward():
            self._add_grad(out.grad * (self.data >= 0))
        return out._with(_backward)

    def exp(self):
        out = self._new(torch.exp(self.data), (self,))

        def _backward():
            self._add_grad(out.grad * out.data)
        return out._with(_backward)

    def log(self):
        out = self._new(torch.log(self.data), (self,))

        def _backward():
            self._add_grad(out.grad / self.data)
        return out._with(_backward)

    def tanh(self):
        out = self._new(torch.tanh(self.data), (self,))

        def _backward():
            self._add_grad(out.grad * (1 - out.data ** 2))
        return out._with(_backward)

    def sigmoid(self):
        out = self._new(torch.sigmoid(self.data), (self,))

        def _backward():
            self._add_grad(out.grad * out.data * (1 - out.data))
        return out._with(_backward)

    def maximum(self, other):
        other = self._wrap(other)
        out = self._new(torch.maximum(self.data, other.data), (self, other))

        def _backward():
            a_wins = (self.data > other.data).to(out.grad.dtype)
            tie = (self.data == other.data).to(out.grad.dtype)
            share = a_wins + 0.5 * tie
            self._add_grad(_unbroadcast(out.grad * share, self.shape))
            other._add_grad(_unbroadcast(out.grad * (1 - share), other.shape))
        return out._with(_backward)

    def sum(self):
        out = self._new(self.data.sum(), (self,))

        def _backward():
            self._add_grad(torch.ones_like(self.data) * out.grad)
        return out._with(_backward)

    def mean(self):
        out = self._new(self.data.mean(), (self,))

        def _backward():
            self._add_grad(torch.ones_like(self.data) * out.grad / self.data.numel())
        return out._with(_backward)

    @property
    def T(self):
        out = self._new(self.data.T, (self,))

        def _backward():
            self._add_grad(out.grad.T)
        return out._with(_backward)

    def reshape(self, *shape):
        out = self._new(self.data.reshape(*shape), (self,))

        def _backward():
            self._add_grad(out.grad.reshape(self.shape))
        return out._with(_backward)

    # -------------------------------------------------------------- backward
    def backward(self, grad=None):
        self.grad = torch.ones_like(self.data) if grad is None else grad

        # collect the graph, then go newest -> oldest (creation order is topological)
        nodes, seen, stack = [], {self._id}, [self]
        while stack:
            n = stack.pop()
            nodes.append(n)
            for p in n._parents:
                if p._id not in seen:
                    seen.add(p._id)
                    stack.append(p)
        nodes.sort(key=lambda n: n._id, reverse=True)

        for n in nodes:
            if n._backward is not None and n.grad is not None:
                n._backward()
        # free the graph
        for n in nodes:
            n._parents, n._backward = (), None
