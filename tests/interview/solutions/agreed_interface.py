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


class _Node:
    """How a result was made: its inputs' nodes (or leaves) and the rule that reads only what it needs."""

    __slots__ = ("inputs", "rule")

    def __init__(self, inputs, rule):
        self.inputs, self.rule = inputs, rule


def _input_of(t):
    return t._node if t._node is not None else (t if t.requires_grad else None)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._node = None

    def _result(self, data, parents, rule):
        out = Tensor(data)
        if _recording and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._node = _Node(tuple(_input_of(p) for p in parents), rule)
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
        root = _input_of(self)
        order, seen, stack = [], {id(root)}, [(root, iter(_inputs(root)))]
        while stack:
            item, inputs = stack[-1]
            for child in inputs:
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(_inputs(child))))
                    break
            else:
                stack.pop()
                order.append(item)
        for item in order:
            if isinstance(item, Tensor):
                item.grad = None  # agreed: a new backward() starts the leaves' grads afresh
        grads = {id(root): torch.ones_like(self.data)}
        for item in reversed(order):
            g = grads.pop(id(item), None)
            if g is None:
                continue
            if isinstance(item, Tensor):
                item.grad = g if item.grad is None else item.grad + g
                continue
            for target, pg in zip(item.inputs, item.rule(g)):
                if target is not None:
                    grads[id(target)] = grads[id(target)] + pg if id(target) in grads else pg
            item.inputs, item.rule = (), None  # free the graph once its gradient has passed on


def _inputs(item):
    return item.inputs if isinstance(item, _Node) else ()
