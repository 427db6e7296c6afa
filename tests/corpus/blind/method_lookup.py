"""The forward stores the op's name; backward finds the rule as a method named
`_grad_<op>` with getattr. Order: sort by a creation counter (inputs are always older
than their outputs), newest first, with a heap."""

import heapq
import itertools

import torch

_clock = itertools.count()


def _shrink(g, shape):
    if g.shape == shape:
        return g
    lead = g.dim() - len(shape)
    g = g.sum(dim=tuple(range(lead))) if lead else g
    dims = tuple(i for i, s in enumerate(shape) if s == 1)
    return g.sum(dim=dims, keepdim=True) if dims else g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = None
        self.args = ()
        self.stamp = next(_clock)

    def _result(self, op, data, *args):
        tensors = [a for a in args if isinstance(a, Tensor)]
        out = Tensor(data, any(t.requires_grad for t in tensors))
        if out.requires_grad:
            out.op, out.args = op, args
        return out

    def _wrap(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        other = self._wrap(other)
        return self._result("add", self.data + other.data, self, other)

    def __mul__(self, other):
        other = self._wrap(other)
        return self._result("mul", self.data * other.data, self, other)

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, other):
        return self._result("matmul", self.data @ other.data, self, other)

    def relu(self):
        return self._result("relu", torch.clamp(self.data, min=0.0), self)

    def sum(self):
        return self._result("sum", self.data.sum(), self)

    def maximum(self, other):
        return self._result("maximum", torch.maximum(self.data, other.data), self, other)

    def _grad_add(self, g):
        a, b = self.args
        return _shrink(g, a.data.shape), _shrink(g, b.data.shape)

    def _grad_mul(self, g):
        a, b = self.args
        return _shrink(g * b.data, a.data.shape), _shrink(g * a.data, b.data.shape)

    def _grad_matmul(self, g):
        a, b = self.args
        return g @ b.data.mT, a.data.mT @ g

    def _grad_relu(self, g):
        (a,) = self.args
        return (g * (a.data >= 0),)

    def _grad_sum(self, g):
        (a,) = self.args
        return (torch.ones_like(a.data) * g,)

    def _grad_maximum(self, g):
        a, b = self.args
        half = 0.5 * (a.data == b.data)
        return g * ((a.data > b.data) + half), g * ((b.data > a.data) + half)

    def backward(self, grad=None):
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        heap = [(-self.stamp, self)]
        queued = {id(self)}
        while heap:
            _, t = heapq.heappop(heap)
            g = grads.pop(id(t))
            if t.op is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for a, ag in zip(t.args, getattr(t, "_grad_" + t.op)(g)):
                if not a.requires_grad:
                    continue
                grads[id(a)] = grads[id(a)] + ag if id(a) in grads else ag
                if id(a) not in queued:
                    queued.add(id(a))
                    heapq.heappush(heap, (-a.stamp, a))
            t.op, t.args = None, ()
