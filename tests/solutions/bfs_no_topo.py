"""Backward walks a queue in breadth-first order instead of reverse topological order.

Each queue entry adds one contribution to a node and then passes the node's
running total on, so a reused intermediate is counted again for every earlier
contribution: ``x1 = x0 + x0; x2 = x1 + x1`` gives x0 a gradient of 6, not 4.
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
        from collections import deque

        totals = {}
        queue = deque([(self, torch.ones_like(self.data))])
        while queue:
            t, g = queue.popleft()
            totals[id(t)] = totals[id(t)] + g if id(t) in totals else g
            if t._backward is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            # the bug: the running total goes on, not just the new contribution
            for parent, pg in zip(t._parents, t._backward(totals[id(t)])):
                if parent.requires_grad:
                    queue.append((parent, pg))
