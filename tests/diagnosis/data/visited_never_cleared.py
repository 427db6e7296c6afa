"""A micrograd-style engine whose visited set lives at module level and is never cleared.

Each node is marked by its id(); once a graph is freed, Python hands its nodes' ids to new objects, so a
later graph finds some of its nodes "visited" already and skips them. The first graph a process runs is
always right.
"""
import torch

_visited = set()


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
        order = []

        def visit(node):
            if id(node) not in _visited:
                _visited.add(id(node))
                for parent in node._prev:
                    visit(parent)
                order.append(node)

        visit(self)
        self.grad = torch.ones_like(self.data)
        for node in reversed(order):
            if node._rule is not None and node.grad is not None:
                node._rule(node.grad)
