"""A functional autograd engine.

The ops are module-level functions (``add``, ``mul``, ``matmul``, ...); the
Tensor methods only forward to them. Whether results are recorded is decided by
the ``recording(flag)`` context manager, which ``no_grad()`` uses. backward()
counts consumers per edge and runs Kahn's algorithm, then frees the graph.
Core, no_grad(), memory release, mean, batch_norm, max_pool2d, avg_pool2d.
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

_state = {"record": True}


@contextlib.contextmanager
def recording(flag):
    before = _state["record"]
    _state["record"] = flag
    try:
        yield
    finally:
        _state["record"] = before


def no_grad():
    return recording(False)


def _emit(value, inputs, rule):
    out = Tensor(value)
    if _state["record"] and any(t.requires_grad for t in inputs):
        out.requires_grad = True
        out._inputs = inputs
        out._rule = rule
    return out


def _same(a, b):
    if a.data.shape != b.data.shape:
        raise ValueError("broadcasting is not supported")


def add(a, b):
    _same(a, b)
    return _emit(a.data + b.data, (a, b), lambda g: (g, g))


def mul(a, b):
    _same(a, b)
    x, y = a.data, b.data
    return _emit(x * y, (a, b), lambda g: (g * y, g * x))


def matmul(a, b):
    x, y = a.data, b.data
    return _emit(x @ y, (a, b), lambda g: (g @ y.T, x.T @ g))


def relu(a):
    keep = a.data > 0
    return _emit(torch.relu(a.data), (a,), lambda g: (g * keep,))


def total(a):
    shape = a.data.shape
    return _emit(a.data.sum(), (a,), lambda g: (torch.ones(shape, dtype=g.dtype) * g,))


def mean(a):
    shape, n = a.data.shape, a.data.numel()
    return _emit(a.data.mean(), (a,), lambda g: (torch.ones(shape, dtype=g.dtype) * (g / n),))


def batch_norm(a, eps=1e-5):
    x = a.data
    n = x.shape[0]
    centered = x - x.mean(dim=0)
    var = x.var(dim=0)
    inv_std = 1.0 / torch.sqrt(var + eps)
    xhat = centered * inv_std

    def rule(g):
        return (inv_std / n * (n * g - g.sum(dim=0) - xhat * (g * xhat).sum(dim=0)),)

    return _emit(xhat, (a,), rule)


def _patches(x, k):
    n, c, h, w = x.shape
    cols = F.unfold(x.reshape(n * c, 1, h, w), kernel_size=k, stride=k)   # (N*C, k*k, L)
    return cols, (n, c, h // k, w // k)


def _unpatch(gcols, x_shape, k):
    n, c, h, w = x_shape
    return F.fold(gcols, (h, w), kernel_size=k, stride=k).reshape(n, c, h, w)


def max_pool2d(a, k):
    cols, out_shape = _patches(a.data, k)
    values, where = cols.max(dim=1)
    x_shape = a.data.shape

    def rule(g):
        gcols = torch.zeros(cols.shape, dtype=g.dtype)
        gcols.scatter_(1, where.unsqueeze(1), g.reshape(g.shape[0] * g.shape[1], 1, -1))
        return (_unpatch(gcols, x_shape, k),)

    return _emit(values.reshape(out_shape), (a,), rule)


def avg_pool2d(a, k):
    cols, out_shape = _patches(a.data, k)
    x_shape, l = a.data.shape, cols.shape[2]

    def rule(g):
        gcols = (g.reshape(-1, 1, l) / (k * k)).expand(-1, k * k, l)
        return (_unpatch(gcols, x_shape, k),)

    return _emit(cols.mean(dim=1).reshape(out_shape), (a,), rule)


def backward(root, grad=None):
    consumers, stack, seen = {}, [root], {id(root)}
    while stack:
        node = stack.pop()
        for x in node._inputs:
            consumers[id(x)] = consumers.get(id(x), 0) + 1
            if id(x) not in seen:
                seen.add(id(x))
                stack.append(x)
    grads = {id(root): torch.ones_like(root.data) if grad is None else grad}
    ready = [root]
    while ready:
        node = ready.pop()
        g = grads.pop(id(node), None)
        if not node._inputs:
            if node.requires_grad and g is not None:
                node.grad = g.clone() if node.grad is None else node.grad + g
            continue
        for x, gx in zip(node._inputs, node._rule(g)):
            if x.requires_grad:
                grads[id(x)] = grads[id(x)] + gx if id(x) in grads else gx
            consumers[id(x)] -= 1
            if consumers[id(x)] == 0:
                ready.append(x)
        node._inputs, node._rule = (), None


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._rule = None

    def __add__(self, other):
        return add(self, other)

    def __mul__(self, other):
        return mul(self, other)

    def __matmul__(self, other):
        return matmul(self, other)

    def relu(self):
        return relu(self)

    def sum(self):
        return total(self)

    def mean(self):
        return mean(self)

    def batch_norm(self, eps=1e-5):
        return batch_norm(self, eps)

    def max_pool2d(self, k):
        return max_pool2d(self, k)

    def avg_pool2d(self, k):
        return avg_pool2d(self, k)

    def backward(self, grad=None):
        backward(self, grad)
