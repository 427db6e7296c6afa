"""Functional style: the ops are free functions; Tensor's operators call them."""

import torch


def _unbroadcast(g, shape):
    """Sum g back down to ``shape`` (undo broadcasting)."""
    while g.dim() > len(shape):
        g = g.sum(dim=0)
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(dim=i, keepdim=True)
    return g


def _result(data, parents, vjp):
    out = Tensor(data)
    if any(p.requires_grad for p in parents):
        out.requires_grad = True
        out._parents = parents
        out._vjp = vjp
    return out


def add(a, b):
    def vjp(g):
        return _unbroadcast(g, a.data.shape), _unbroadcast(g, b.data.shape)
    return _result(a.data + b.data, (a, b), vjp)


def sub(a, b):
    def vjp(g):
        return _unbroadcast(g, a.data.shape), _unbroadcast(-g, b.data.shape)
    return _result(a.data - b.data, (a, b), vjp)


def neg(a):
    return _result(-a.data, (a,), lambda g: (-g,))


def mul(a, b):
    x, y = a.data, b.data

    def vjp(g):
        ga = _unbroadcast(g * y, x.shape)
        gb = g * x
        lead = gb.dim() - y.dim()
        if lead > 0:
            gb = gb.sum(dim=tuple(range(lead)))
        for i, s in enumerate(y.shape):
            if s == 1 and gb.shape[i] != 1:
                gb = gb.sum(dim=i)
        return ga, gb
    return _result(x * y, (a, b), vjp)


def matmul(a, b):
    x, y = a.data, b.data
    return _result(x @ y, (a, b), lambda g: (g @ y.T, x.T @ g))


def relu(a):
    mask = a.data > 0
    return _result(a.data * mask, (a,), lambda g: (g * mask,))


def total(a):
    shape = a.data.shape
    return _result(a.data.sum(), (a,), lambda g: (g.expand(shape).clone(),))


def topological_order(root):
    order, visited = [], set()
    stack = [(root, iter(root._parents))]
    visited.add(id(root))
    while stack:
        node, parents = stack[-1]
        for p in parents:
            if p.requires_grad and id(p) not in visited:
                visited.add(id(p))
                stack.append((p, iter(p._parents)))
                break
        else:
            stack.pop()
            order.append(node)
    return order


def backward(root, grad=None):
    if grad is None:
        grad = torch.ones_like(root.data)
    grads = {id(root): grad}
    for node in reversed(topological_order(root)):
        g = grads.pop(id(node))
        if node._vjp is None:
            node.grad = g.clone() if node.grad is None else node.grad + g
            continue
        for p, pg in zip(node._parents, node._vjp(g)):
            if p.requires_grad:
                grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._vjp = None

    def __add__(self, other):
        return add(self, other)

    def __sub__(self, other):
        return sub(self, other)

    def __neg__(self):
        return neg(self)

    def __mul__(self, other):
        return mul(self, other)

    def __matmul__(self, other):
        return matmul(self, other)

    def relu(self):
        return relu(self)

    def sum(self):
        return total(self)

    def backward(self, grad=None):
        backward(self, grad)
