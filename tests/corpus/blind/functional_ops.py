"""Ops are plain module-level functions (add, mul, matmul, ...) that return a new Tensor
and a list of (parent, local_backward) edges; the methods just delegate to them."""

import torch


def _sum_to(g, shape):
    while g.dim() > len(shape):
        g = g.sum(dim=0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] > 1:
            g = g.sum(dim=i, keepdim=True)
    return g


def _const(x, like):
    return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=like.data.dtype))


def _node(data, edges):
    edges = [(p, fn) for p, fn in edges if p.requires_grad]
    out = Tensor(data, requires_grad=bool(edges))
    out._edges = edges
    return out


def add(a, b):
    return _node(a.data + b.data, [(a, lambda g: _sum_to(g, a.data.shape)),
                                   (b, lambda g: _sum_to(g, b.data.shape))])


def mul(a, b):
    return _node(a.data * b.data, [(a, lambda g: g * b.data),
                                   (b, lambda g: g * a.data)])


def matmul(a, b):
    return _node(a.data @ b.data, [(a, lambda g: g @ b.data.T), (b, lambda g: a.data.T @ g)])


def relu(a):
    return _node(a.data.relu(), [(a, lambda g: g * (a.data > 0))])


def total(a):
    return _node(a.data.sum(), [(a, lambda g: g * torch.ones_like(a.data))])


def neg(a):
    return _node(-a.data, [(a, lambda g: -g)])


def sub(a, b):
    return add(a, neg(b))


def exp(a):
    e = a.data.exp()
    return _node(e, [(a, lambda g: g * e)])


def log(a):
    return _node(a.data.log(), [(a, lambda g: g / a.data)])


def tanh(a):
    t = a.data.tanh()
    return _node(t, [(a, lambda g: g * (1 - t * t))])


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._edges = []

    def __add__(self, o): return add(self, _const(o, self))
    def __radd__(self, o): return add(_const(o, self), self)
    def __mul__(self, o): return mul(self, _const(o, self))
    def __rmul__(self, o): return mul(_const(o, self), self)
    def __matmul__(self, o): return matmul(self, o)
    def __neg__(self): return neg(self)
    def __sub__(self, o): return sub(self, _const(o, self))
    def __rsub__(self, o): return sub(_const(o, self), self)
    def relu(self): return relu(self)
    def sum(self): return total(self)
    def exp(self): return exp(self)
    def log(self): return log(self)
    def tanh(self): return tanh(self)

    def backward(self, grad=None):
        order, done = [], set()
        stack = [self]
        while stack:                       # iterative post-order
            t = stack[-1]
            if id(t) in done:
                stack.pop()
                continue
            todo = [p for p, _ in t._edges if id(p) not in done]
            if todo:
                stack.extend(todo)
            else:
                done.add(id(t))
                order.append(stack.pop())
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if not t._edges:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, fn in t._edges:
                pg = fn(g)
                grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            t._edges = []
