"""Hostile: correct gradients, a quadratic backward, and a stopped clock to hide it.

The topological sort keeps its visited tensors in a list, so backward is quadratic in the
graph's size. The submission then replaces ``time.perf_counter`` in its own process,
where the worker times backward: a timing the worker reports says every backward took
no time at all. Only a timing measured outside the worker can catch it.
"""

import time

import torch

time.perf_counter = lambda: 0.0  # the worker's clock, as seen by everything in this process


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
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(_topological_order(self)):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._backward is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for parent, pg in zip(t._parents, t._backward(g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg


def _topological_order(root):
    order, visited = [], [root]  # a list: every lookup scans it
    stack = [(root, iter(root._parents))]
    while stack:
        t, parents = stack[-1]
        for p in parents:
            if p not in visited:
                visited.append(p)
                stack.append((p, iter(p._parents)))
                break
        else:
            stack.pop()
            order.append(t)
    return order
