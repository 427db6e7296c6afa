"""A correct engine that also notes whether the garbage collector was on while it built a big graph.

Its backward raises on a graph of more than 50,000 nodes built with the collector running, so a
grade shows whether the deep-chain probe paused it.
"""
import gc

import torch

_collecting = []


class Tensor:
    def __init__(self, data, requires_grad=False, _prev=(), _rule=None):
        self.data = data if isinstance(data, torch.Tensor) else torch.tensor(data, dtype=torch.float64)
        self.requires_grad = requires_grad or any(p.requires_grad for p in _prev)
        self.grad = None
        self._prev, self._rule = tuple(_prev), _rule

    def _add(self, g):
        if self.requires_grad:
            self.grad = g if self.grad is None else self.grad + g

    def __add__(self, other):
        _collecting.append(gc.isenabled())
        return Tensor(self.data + other.data, _prev=(self, other),
                      _rule=lambda g: (self._add(g), other._add(g)))

    def __mul__(self, other):
        return Tensor(self.data * other.data, _prev=(self, other),
                      _rule=lambda g: (self._add(g * other.data), other._add(g * self.data)))

    def __matmul__(self, other):
        return Tensor(self.data @ other.data, _prev=(self, other),
                      _rule=lambda g: (self._add(g @ other.data.T), other._add(self.data.T @ g)))

    def relu(self):
        return Tensor(self.data.clamp(min=0), _prev=(self,), _rule=lambda g: self._add(g * (self.data > 0)))

    def sum(self):
        return Tensor(self.data.sum(), _prev=(self,), _rule=lambda g: self._add(g * torch.ones_like(self.data)))

    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((p, False) for p in node._prev)
        if len(order) > 50_000 and any(_collecting[-50_000:]):
            raise RuntimeError("the garbage collector ran while this graph was built")
        self.grad = torch.ones_like(self.data)
        for node in reversed(order):
            if node._rule is not None and node.grad is not None:
                node._rule(node.grad)
