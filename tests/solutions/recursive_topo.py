"""Correct, micrograd's way: the topological sort is a recursive depth-first search.

Fine for ordinary graphs; a chain deeper than Python's recursion limit (the
100,000-node follow-up) raises RecursionError.
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
        order, visited = [], set()

        def visit(t):
            if id(t) not in visited:
                visited.add(id(t))
                for p in t._parents:
                    visit(p)
                order.append(t)

        visit(self)
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._backward is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for parent, pg in zip(t._parents, t._backward(g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
