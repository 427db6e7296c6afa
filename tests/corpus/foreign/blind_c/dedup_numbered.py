import itertools

import torch


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ: "
                         "this engine does not broadcast")

_serial = itertools.count()


def _distinct(tensors):
    """The tensors in order, each once (so the walk visits a parent once)."""
    out = []
    for t in tensors:
        if all(t is not u for u in out):
            out.append(t)
    return tuple(out)


class Tensor:
    """Every tensor gets a serial number when it is created.

    A result is always created after its inputs, so sorting the graph by serial
    number, newest first, is a valid reverse topological order (the order of a
    Wengert list read backwards).
    """

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.serial = next(_serial)
        self.inputs = ()
        self.local_grads = None

    def _make(self, data, inputs, local_grads):
        out = Tensor(data)
        if any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out.inputs = _distinct(inputs)
            out.local_grads = local_grads
        return out

    def __add__(self, other):
        _check_same_shape(self.data, other.data)
        return self._make(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        _check_same_shape(self.data, other.data)
        a, b = self.data, other.data
        return self._make(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._make(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        m = (self.data > 0).to(self.data.dtype)
        return self._make(self.data * m, (self,), lambda g: (g * m,))

    def sum(self):
        shape = self.data.shape
        return self._make(self.data.sum(), (self,), lambda g: (torch.ones(shape, dtype=g.dtype) * g,))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return self._make(self.data.mean(), (self,), lambda g: (torch.ones(shape, dtype=g.dtype) * g / n,))

    def tanh(self):
        y = self.data.tanh()
        return self._make(y, (self,), lambda g: (g * (1 - y * y),))

    def exp(self):
        y = self.data.exp()
        return self._make(y, (self,), lambda g: (g * y,))

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        found = {id(self): self}
        todo = [self]
        while todo:
            t = todo.pop()
            for i in t.inputs:
                if i.requires_grad and id(i) not in found:
                    found[id(i)] = i
                    todo.append(i)
        grads = {id(self): grad}
        for t in sorted(found.values(), key=lambda t: t.serial, reverse=True):
            g = grads.pop(id(t))
            if t.local_grads is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for i, gi in zip(t.inputs, t.local_grads(g)):
                if i.requires_grad:
                    grads[id(i)] = grads[id(i)] + gi if id(i) in grads else gi
