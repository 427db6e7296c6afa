"""No topological order: backward pushes every contribution down every path, recursively.

The values are right (the chain rule sums over paths), but the work is the
number of paths: exponential on stacked diamonds, and a deep chain overflows
the recursion limit.
"""

import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._backward = None  # output gradient -> one gradient per parent

    def _result(self, data, parents, backward):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._backward = parents, backward
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

    def backward(self):
        self._push(torch.ones_like(self.data))

    def _push(self, g):
        if self._backward is None:
            if self.requires_grad:
                self.grad = g.clone() if self.grad is None else self.grad + g
            return
        for parent, pg in zip(self._parents, self._backward(g)):
            if parent.requires_grad:
                parent._push(pg)  # the bug: passed on before this node's gradient is complete
