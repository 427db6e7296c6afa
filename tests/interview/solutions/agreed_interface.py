"""A core engine built to an interface the interview agreed on: no broadcasting, no upstream
gradient, and a second backward() that overwrites the leaves' grads instead of adding to them."""

import contextlib

import torch

_recording = True


@contextlib.contextmanager
def no_grad():
    global _recording
    previous, _recording = _recording, False
    try:
        yield
    finally:
        _recording = previous


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._rule = None

    def _result(self, data, parents, rule):
        out = Tensor(data)
        if _recording and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents, out._rule = parents, rule
        return out

    @staticmethod
    def _same_shape(a, b):
        if a.data.shape != b.data.shape:
            raise ValueError(f"shapes {tuple(a.data.shape)} and {tuple(b.data.shape)} differ (agreed: no broadcasting)")

    def __add__(self, other):
        self._same_shape(self, other)
        return self._result(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        self._same_shape(self, other)
        a, b = self.data, other.data
        return self._result(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        mask = self.data > 0
        return self._result(self.data * mask, (self,), lambda g: (g * mask,))

    def sum(self):
        shape = self.data.shape
        return self._result(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def backward(self):
        order, seen, stack = [], {id(self)}, [(self, iter(self._parents))]
        while stack:
            node, parents = stack[-1]
            for p in parents:
                if id(p) not in seen:
                    seen.add(id(p))
                    stack.append((p, iter(p._parents)))
                    break
            else:
                stack.pop()
                order.append(node)
        for node in order:
            if not node._parents and node.requires_grad:
                node.grad = None  # agreed: a new backward() starts the leaves' grads afresh
        grads = {id(self): torch.ones_like(self.data)}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if not node._parents:
                if node.requires_grad:
                    node.grad = g if node.grad is None else node.grad + g
                continue
            for parent, pg in zip(node._parents, node._rule(g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
            node._parents, node._rule = (), None  # free the graph once its gradient has passed on
