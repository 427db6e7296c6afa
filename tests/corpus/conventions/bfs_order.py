"""Backward hands gradients on in breadth-first order from the output.

Each node passes its gradient on once, when the breadth-first walk reaches it:
a node that is also consumed further from the output passes its gradient on
before that contribution has arrived. Every gradient that reaches a node along
paths of the same length is right, so diamonds and stacked doublings pass.
"""

from collections import deque

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
        grads = {id(self): torch.ones_like(self.data)}
        for t in _order(self):
            g = grads.pop(id(t), None)
            if g is None or t._backward is None:
                continue
            for parent, pg in zip(t._parents, t._backward(g)):
                if not parent.requires_grad:
                    continue
                if parent._backward is None:  # a leaf takes each contribution as it comes
                    parent.grad = pg.clone() if parent.grad is None else parent.grad + pg
                else:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg


def _order(root):
    order, seen, queue = [], {id(root)}, deque([root])
    while queue:
        t = queue.popleft()
        order.append(t)
        for p in t._parents:
            if id(p) not in seen:
                seen.add(id(p))
                queue.append(p)
    return order
