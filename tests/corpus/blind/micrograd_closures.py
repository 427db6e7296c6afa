"""micrograd, grown up to torch tensors: every op sets a `_backward` closure on its
output, `backward` orders the graph with a recursive topological sort."""

import sys

import torch

sys.setrecursionlimit(1_000_000)   # deep graphs: the recursive sort needs the room


def _unbroadcast(grad, shape):
    while grad.dim() > len(shape):
        grad = grad.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and grad.shape[i] != 1:
            grad = grad.sum(i, keepdim=True)
    return grad


class Tensor:
    def __init__(self, data, requires_grad=False, _children=(), _op=""):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    def __repr__(self):
        return f"Tensor(data={self.data}, grad={self.grad})"

    def _acc(self, g):
        if self.requires_grad:
            self.grad = g if self.grad is None else self.grad + g

    def __add__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(torch.tensor(other, dtype=self.data.dtype))
        out = Tensor(self.data + other.data, self.requires_grad or other.requires_grad, (self, other), "+")

        def _backward():
            self._acc(_unbroadcast(out.grad, self.data.shape))
            other._acc(_unbroadcast(out.grad, other.data.shape))
        out._backward = _backward
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(torch.tensor(other, dtype=self.data.dtype))
        out = Tensor(self.data * other.data, self.requires_grad or other.requires_grad, (self, other), "*")

        def _backward():
            if self.requires_grad:
                self.grad = _unbroadcast(other.data * out.grad, self.data.shape)
            other._acc(_unbroadcast(self.data * out.grad, other.data.shape))
        out._backward = _backward
        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, self.requires_grad or other.requires_grad, (self, other), "@")

        def _backward():
            self._acc(out.grad @ other.data.T)
            other._acc(self.data.T @ out.grad)
        out._backward = _backward
        return out

    def relu(self):
        out = Tensor(torch.clamp(self.data, min=0), self.requires_grad, (self,), "ReLU")

        def _backward():
            self._acc((self.data > 0).to(out.grad.dtype) * out.grad)
        out._backward = _backward
        return out

    def sum(self):
        out = Tensor(self.data.sum(), self.requires_grad, (self,), "sum")

        def _backward():
            self._acc(torch.ones_like(self.data) * out.grad)
        out._backward = _backward
        return out

    def tanh(self):
        t = torch.tanh(self.data)
        out = Tensor(t, self.requires_grad, (self,), "tanh")

        def _backward():
            self._acc((1 - t ** 2) * out.grad)
        out._backward = _backward
        return out

    def __pow__(self, other):
        assert isinstance(other, (int, float)), "only supporting int/float powers for now"
        out = Tensor(self.data ** other, self.requires_grad, (self,), f"**{other}")

        def _backward():
            self._acc((other * self.data ** (other - 1)) * out.grad)
        out._backward = _backward
        return out

    def __neg__(self):
        return self * -1

    def __radd__(self, other):
        return self + other

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __rmul__(self, other):
        return self * other

    def __truediv__(self, other):
        return self * other ** -1

    def __rtruediv__(self, other):
        return other * self ** -1

    def backward(self, grad=None):
        topo = []
        visited = set()

        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)
        build_topo(self)

        for v in topo:
            if v._prev:
                v.grad = None          # intermediates start from nothing on every pass
        self.grad = torch.ones_like(self.data) if grad is None else grad
        for v in reversed(topo):
            if v.grad is not None:     # nothing reached it (e.g. it does not require grad)
                v._backward()
        for v in topo:                 # free the graph
            v._backward = lambda: None
            v._prev = set()
        topo.clear()
        visited.clear()
