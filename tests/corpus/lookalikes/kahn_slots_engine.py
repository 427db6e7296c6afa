"""A correct core engine walked with Kahn's algorithm, over nodes named like torch's.

Each result has a ``grad_fn`` node whose ``next_functions`` are its inputs'
nodes, as in torch, but every one is this file's own class (with ``__slots__``
and no ``__weakref__``). Backward counts each node's consumers first, then
releases a node once every consumer has passed its gradient on.
"""

from collections import deque

import torch


class GradFn:
    __slots__ = ("name", "next_functions", "rule", "tensor")

    def __init__(self, name, next_functions, rule, tensor=None):
        self.name, self.next_functions, self.rule, self.tensor = name, next_functions, rule, tensor


class Tensor:
    __slots__ = ("data", "requires_grad", "grad", "grad_fn")

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = GradFn("leaf", (), None, self) if requires_grad else None

    def _result(self, name, data, inputs, rule):
        out = Tensor(data)
        if any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out.grad_fn = GradFn(name, tuple(t.grad_fn for t in inputs), rule)
        return out

    def __add__(self, other):
        return self._result("add", self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._result("mul", a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result("matmul", a @ b, (self, other), lambda g: (g @ b.mT, a.mT @ g))

    def relu(self):
        positive = self.data > 0
        return self._result("relu", torch.where(positive, self.data, 0.0), (self,),
                            lambda g: (torch.where(positive, g, 0.0),))

    def sum(self):
        shape = self.data.shape
        return self._result("sum", self.data.sum(), (self,), lambda g: (g.expand(shape),))

    def backward(self):
        if self.grad_fn is None:
            return
        consumers, todo = {id(self.grad_fn): 0}, [self.grad_fn]
        while todo:
            node = todo.pop()
            for parent in node.next_functions:
                if parent is not None:
                    if id(parent) not in consumers:
                        consumers[id(parent)] = 0
                        todo.append(parent)
                    consumers[id(parent)] += 1
        grads = {id(self.grad_fn): torch.ones_like(self.data)}
        ready = deque([self.grad_fn])
        while ready:
            node = ready.popleft()
            g = grads.pop(id(node))
            if node.rule is None:
                leaf = node.tensor
                leaf.grad = g if leaf.grad is None else leaf.grad + g
                continue
            for parent, pg in zip(node.next_functions, node.rule(g)):
                if parent is None:
                    continue
                grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
                consumers[id(parent)] -= 1
                if consumers[id(parent)] == 0:
                    ready.append(parent)
            node.next_functions, node.rule = (), None
