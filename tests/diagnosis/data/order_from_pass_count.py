"""Each node runs its rule and then calls backward on each of its inputs again, with no order at all.

The order of the inputs changes from one backward() to the next, as the iteration order of a set of
nodes does (a public engine keeps its inputs in a set): the same graph gets different gradients run
after run. Deterministically so, every other pass, for the tests.
"""
import torch

FLIP = True  # the test writes a copy with False: the same engine, one order every time
_passes = [0]


class Tensor:
    def __init__(self, data, requires_grad=False, _prev=(), _rule=None):
        self.data = data if isinstance(data, torch.Tensor) else torch.tensor(data, dtype=torch.float64)
        self.requires_grad = requires_grad or any(p.requires_grad for p in _prev)
        self.grad = None
        self._prev, self._rule = list(_prev), _rule
        self._acc = torch.zeros_like(self.data)

    def _add_grad(self, g):
        self._acc = self._acc + g

    def __add__(self, other):
        out = Tensor(self.data + other.data, _prev=(self, other))
        out._rule = lambda g: (self._add_grad(g), other._add_grad(g))
        return out

    def __mul__(self, other):
        out = Tensor(self.data * other.data, _prev=(self, other))
        out._rule = lambda g: (self._add_grad(g * other.data), other._add_grad(g * self.data))
        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, _prev=(self, other))
        out._rule = lambda g: (self._add_grad(g @ other.data.T), other._add_grad(self.data.T @ g))
        return out

    def relu(self):
        out = Tensor(self.data.clamp(min=0), _prev=(self,))
        out._rule = lambda g: self._add_grad(g * (self.data > 0))
        return out

    def sum(self):
        out = Tensor(self.data.sum(), _prev=(self,))
        out._rule = lambda g: self._add_grad(g * torch.ones_like(self.data))
        return out

    def backward(self, grad=None):
        if grad is None:
            _passes[0] += 1
            grad = torch.ones_like(self.data)
        self._acc = grad
        if self.requires_grad and not self._prev:
            self.grad = grad
        if self._rule is not None:
            self._rule(grad)
        # The order of the inputs changes from one backward() to the next, as a set's would.
        order = self._prev[::-1] if FLIP and _passes[0] % 2 else self._prev
        for child in order:
            child.backward(child._acc)
