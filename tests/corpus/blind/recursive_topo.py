"""Recursive topological sort (with the recursion limit raised for deep graphs); each
tensor's `_children` are the tensors it was computed from, `_grad_fns` their rules."""

import sys

import torch

sys.setrecursionlimit(10**6)


def unbroadcast(grad, shape):
    for _ in range(grad.dim() - len(shape)):
        grad = grad.sum(dim=0)
    for i, dim in enumerate(shape):
        if dim == 1 and grad.shape[i] != 1:
            grad = grad.sum(dim=i, keepdim=True)
    return grad


class Tensor:
    def __init__(self, data, requires_grad=False, _children=(), _grad_fns=()):
        self.data = data
        self.requires_grad = requires_grad or any(c.requires_grad for c in _children)
        self.grad = None
        self._children = _children
        self._grad_fns = _grad_fns

    def __add__(self, other):
        if not isinstance(other, Tensor):
            other = Tensor(torch.tensor(other, dtype=self.data.dtype))
        return Tensor(self.data + other.data, _children=(self, other),
                      _grad_fns=(lambda g: unbroadcast(g, self.data.shape),
                                 lambda g: unbroadcast(g, other.data.shape)))

    def __mul__(self, other):
        if not isinstance(other, Tensor):
            other = Tensor(torch.tensor(other, dtype=self.data.dtype))
        return Tensor(self.data * other.data, _children=(self, other),
                      _grad_fns=(lambda g: unbroadcast(g * other.data, self.data.shape),
                                 lambda g: unbroadcast(g * self.data, other.data.shape)))

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        return Tensor(self.data @ other.data, _children=(self, other),
                      _grad_fns=(lambda g: g @ other.data.T, lambda g: self.data.T @ g))

    def relu(self):
        return Tensor(self.data.relu(), _children=(self,), _grad_fns=(lambda g: g * (self.data > 0),))

    def sum(self):
        return Tensor(self.data.sum(), _children=(self,),
                      _grad_fns=(lambda g: torch.ones_like(self.data) * g,))

    def mean(self):
        n = self.data.numel()
        return Tensor(self.data.mean(), _children=(self,),
                      _grad_fns=(lambda g: torch.ones_like(self.data) * g / n,))

    def backward(self, grad=None):
        topo = []

        def visit(t):
            for child in t._children:
                visit(child)
            topo.append(t)

        visit(self)
        for t in topo:
            if t._children:
                t.grad = None
        self.grad = torch.ones_like(self.data) if grad is None else grad
        for t in reversed(topo):
            if t.grad is None or not t._children:
                continue
            for child, fn in zip(t._children, t._grad_fns):
                if child.requires_grad:
                    g = fn(t.grad)
                    child.grad = g if child.grad is None else child.grad + g
        for t in topo:
            t._children, t._grad_fns = (), ()
        topo.clear()
