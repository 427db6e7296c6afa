"""Hostile: a correct forward pass, but backward never returns (and SIGTERM/SIGINT are ignored)."""

import signal

import torch

# Polite requests to stop are ignored: only SIGKILL ends this process.
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)


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
        while True:
            pass


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
