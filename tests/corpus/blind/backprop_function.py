"""Backprop as a pure function: `gradients(output)` walks the graph (recursive DFS
with a visited set, recursion limit raised) and returns {tensor id: gradient};
Tensor.backward stores the leaves' entries."""

import sys

import torch

sys.setrecursionlimit(400_000)


def _sum_like(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


def _dfs(node, order, visited):
    visited.add(id(node))
    for parent, _ in node.backprops:
        if id(parent) not in visited:
            _dfs(parent, order, visited)
    order.append(node)


def topological_order(root):
    order = []
    _dfs(root, order, set())
    return order


def gradients(output, seed):
    grads = {id(output): seed}
    order = topological_order(output)
    for node in reversed(order):
        g = grads.get(id(node))
        if g is None:
            continue
        for parent, fn in node.backprops:
            pg = fn(g)
            grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
    return order, grads


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.backprops = []

    def _op(self, data, pairs):
        pairs = [(t, fn) for t, fn in pairs if t.requires_grad]
        out = Tensor(data, requires_grad=bool(pairs))
        out.backprops = pairs
        return out

    def _num(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._num(o)
        return self._op(self.data + o.data, [(self, lambda g: _sum_like(g, self.data.shape)),
                                             (o, lambda g: _sum_like(g, o.data.shape))])

    def __mul__(self, o):
        o = self._num(o)
        return self._op(self.data * o.data, [(self, lambda g: _sum_like(g * o.data, self.data.shape)),
                                             (o, lambda g: _sum_like(g * self.data, o.data.shape))])

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, o):
        return self._op(self.data @ o.data, [(self, lambda g: g @ o.data.T), (o, lambda g: self.data.T @ g)])

    def relu(self):
        return self._op(self.data.relu(), [(self, lambda g: g * (self.data > 0))])

    def sum(self):
        return self._op(self.data.sum(), [(self, lambda g: g.expand(self.data.shape).clone())])

    def mean(self):
        return self._op(self.data.mean(), [(self, lambda g: g.expand(self.data.shape).clone())])

    def reshape(self, shape):
        return self._op(self.data.reshape(shape), [(self, lambda g: g.reshape(self.data.shape))])

    def backward(self, grad=None):
        seed = torch.ones_like(self.data) if grad is None else grad
        order, grads = gradients(self, seed)
        for node in order:
            if not node.backprops and node.requires_grad and id(node) in grads:
                g = grads[id(node)]
                node.grad = g.clone() if node.grad is None else node.grad + g
            node.backprops = []
