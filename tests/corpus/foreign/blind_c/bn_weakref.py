"""The backward graph is made of Node objects, separate from the tensors.

A node holds strong references to its input nodes (so the graph lives as long
as the output does) and only a weak reference to its own tensor: a leaf's
gradient is written through it, and an intermediate tensor the caller has
dropped is not kept alive by the graph.
"""

import weakref

import torch


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ: "
                         "this engine does not broadcast")


class Node:
    __slots__ = ("inputs", "vjp", "owner")

    def __init__(self, owner, inputs=(), vjp=None):
        self.owner = weakref.ref(owner)
        self.inputs = inputs
        self.vjp = vjp


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._node = None

    def _graph_node(self):
        if self._node is None:
            self._node = Node(self)  # a leaf
        return self._node

    def _op(self, data, inputs, vjp):
        out = Tensor(data)
        if any(t.requires_grad for t in inputs):
            out.requires_grad = True
            nodes = tuple(t._graph_node() if t.requires_grad else None for t in inputs)
            out._node = Node(out, nodes, vjp)
        return out

    def __add__(self, other):
        _check_same_shape(self.data, other.data)
        return self._op(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        _check_same_shape(self.data, other.data)
        a, b = self.data, other.data
        return self._op(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._op(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        mask = self.data > 0
        return self._op(torch.where(mask, self.data, torch.zeros_like(self.data)), (self,),
                        lambda g: (torch.where(mask, g, torch.zeros_like(g)),))

    def sum(self):
        shape = self.data.shape
        return self._op(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return self._op(self.data.mean(), (self,), lambda g: ((g / n).expand(shape).clone(),))

    def tanh(self):
        y = self.data.tanh()
        return self._op(y, (self,), lambda g: (g * (1 - y * y),))

    def __getitem__(self, ids):
        rows = self.data.shape

        def vjp(g):
            full = torch.zeros(rows, dtype=g.dtype)
            full.index_add_(0, ids.reshape(-1), g.reshape(-1, *rows[1:]))
            return (full,)

        return self._op(self.data[ids], (self,), vjp)

    def batch_norm(self, eps=1e-5):
        x = self.data
        mu = x.mean(dim=0, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=0, keepdim=True)
        inv = (var + eps).rsqrt()
        xhat = (x - mu) * inv
        n = x.shape[0]

        def vjp(g):
            return (g * inv,)

        return self._op(xhat, (self,), vjp)

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        root = self._graph_node()
        # post-order over nodes, iterative
        order, seen = [], {id(root)}
        stack = [(root, 0)]
        while stack:
            node, i = stack.pop()
            if i < len(node.inputs):
                stack.append((node, i + 1))
                child = node.inputs[i]
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(node)
        grads = {id(root): grad}
        for node in reversed(order):
            g = grads.pop(id(node))
            if node.vjp is None:
                leaf = node.owner()
                if leaf is not None:
                    leaf.grad = g.clone() if leaf.grad is None else leaf.grad + g
                continue
            for child, cg in zip(node.inputs, node.vjp(g)):
                if child is not None:
                    grads[id(child)] = grads[id(child)] + cg if id(child) in grads else cg
