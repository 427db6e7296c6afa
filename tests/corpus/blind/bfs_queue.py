"""Each tensor keeps `parents` and a `grad_fn` that maps its gradient to its parents'
gradients. Backward walks the graph outward from the loss with a queue."""

from collections import deque

import torch


def sum_to_shape(g, shape):
    if g.shape == torch.Size(shape):
        return g
    while g.ndim > len(shape):
        g = g.sum(dim=0)
    axes = [i for i, s in enumerate(shape) if s == 1]
    return g.sum(dim=axes, keepdim=True) if axes else g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.parents = []
        self.grad_fn = None

    @staticmethod
    def make(data, parents, grad_fn):
        t = Tensor(data, requires_grad=any(p.requires_grad for p in parents))
        if t.requires_grad:
            t.parents = list(parents)
            t.grad_fn = grad_fn
        return t

    def __add__(self, other):
        if not isinstance(other, Tensor):
            other = Tensor(torch.tensor(other, dtype=self.data.dtype))
        return Tensor.make(self.data + other.data, [self, other],
                           lambda g: [sum_to_shape(g, self.data.shape), sum_to_shape(g, other.data.shape)])

    def __radd__(self, other):
        return self.__add__(other)

    def __mul__(self, other):
        if not isinstance(other, Tensor):
            other = Tensor(torch.tensor(other, dtype=self.data.dtype))
        return Tensor.make(self.data * other.data, [self, other],
                           lambda g: [sum_to_shape(g * other.data, self.data.shape),
                                      sum_to_shape(g * self.data, other.data.shape)])

    def __rmul__(self, other):
        return self.__mul__(other)

    def __matmul__(self, other):
        return Tensor.make(self.data @ other.data, [self, other],
                           lambda g: [g @ other.data.T, self.data.T @ g])

    def relu(self):
        return Tensor.make(torch.relu(self.data), [self], lambda g: [g * (self.data > 0)])

    def sum(self):
        return Tensor.make(self.data.sum(), [self], lambda g: [g * torch.ones_like(self.data)])

    def sigmoid(self):
        s = torch.sigmoid(self.data)
        return Tensor.make(s, [self], lambda g: [g * s * (1 - s)])

    def backward(self, grad=None):
        self.grad = torch.ones_like(self.data) if grad is None else grad.clone()
        queue = deque([self])
        seen = {id(self)}
        visited = []
        while queue:
            node = queue.popleft()
            visited.append(node)
            if node.grad_fn is None:
                continue
            for parent, g in zip(node.parents, node.grad_fn(node.grad)):
                if not parent.requires_grad:
                    continue
                parent.grad = g if parent.grad is None else parent.grad + g
                if id(parent) not in seen:
                    seen.add(id(parent))
                    queue.append(parent)
        for node in visited:           # the graph is spent: let it go
            node.parents, node.grad_fn = [], None
