"""Autograd with a recursion-free, three-colour depth-first sort.

WHITE: not seen yet, GREY: on the stack, BLACK: every input finished. A node is
appended to the order when it turns black. Each result holds a ``_grad_fn``
closure over what its rule reads; backward() drops the graph once done.
Core, backward(grad), two passes, no_grad(), deep graphs, memory release.
"""
import contextlib

import torch

WHITE, GREY, BLACK = 0, 1, 2

_recording = [True]


@contextlib.contextmanager
def no_grad():
    _recording.append(False)
    try:
        yield
    finally:
        _recording.pop()


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._prev = ()
        self._grad_fn = None

    def _attach(self, prev, grad_fn):
        if _recording[-1] and any(p.requires_grad for p in prev):
            self.requires_grad = True
            self._prev = prev
            self._grad_fn = grad_fn
        return self

    def __add__(self, other):
        assert self.data.shape == other.data.shape, "no broadcasting"
        return Tensor(self.data + other.data)._attach((self, other), lambda g: (g, g))

    def __mul__(self, other):
        assert self.data.shape == other.data.shape, "no broadcasting"
        a, b = self.data, other.data
        return Tensor(a * b)._attach((self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor(a @ b)._attach((self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return Tensor(torch.relu(x))._attach((self,), lambda g: (g * torch.sign(x),))

    def sum(self):
        shape = self.data.shape
        return Tensor(self.data.sum())._attach((self,), lambda g: (g.expand(shape).clone(),))

    def _topological(self):
        color, order = {}, []
        stack = [self]
        while stack:
            node = stack[-1]
            state = color.get(id(node), WHITE)
            if state == WHITE:
                color[id(node)] = GREY
                for p in node._prev:
                    if color.get(id(p), WHITE) == WHITE:
                        stack.append(p)
            else:
                stack.pop()
                if state == GREY:
                    color[id(node)] = BLACK
                    order.append(node)
        return order

    def backward(self, grad=None):
        order = self._topological()
        acc = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(order):
            g = acc.pop(id(node), None)
            if g is None:
                continue
            if node._grad_fn is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for p, gp in zip(node._prev, node._grad_fn(g)):
                if p.requires_grad:
                    acc[id(p)] = acc[id(p)] + gp if id(p) in acc else gp
            node._prev, node._grad_fn = (), None
