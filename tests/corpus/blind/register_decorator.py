"""Ops are registered with a decorator into GRAD_RULES; a tensor only stores the op's
name, its inputs and the saved values. Backward: Kahn's algorithm, consumers counted."""

from collections import deque

import torch

GRAD_RULES = {}


def register(name):
    def deco(fn):
        GRAD_RULES[name] = fn
        return fn
    return deco


def _sum_back(g, shape):
    if g.shape == shape:
        return g
    while g.dim() > len(shape):
        g = g.sum(0)
    keep = [i for i, s in enumerate(shape) if s == 1]
    return g.sum(keep, keepdim=True) if keep else g


@register("add")
def _(g, inputs, saved):
    a, b = inputs
    return _sum_back(g, a.data.shape), _sum_back(g, b.data.shape)


@register("mul")
def _(g, inputs, saved):
    a, b = inputs
    return _sum_back(g * b.data, a.data.shape), _sum_back(g * a.data, b.data.shape)


@register("matmul")
def _(g, inputs, saved):
    a, b = inputs
    return g @ b.data.T, a.data.T @ g


@register("relu")
def _(g, inputs, saved):
    return (g * (inputs[0].data > 0),)


@register("sum")
def _(g, inputs, saved):
    return (torch.ones_like(inputs[0].data) * g,)


@register("sigmoid")
def _(g, inputs, saved):
    s = saved
    return (g * (1 - s),)


@register("tanh")
def _(g, inputs, saved):
    return (g * (1 - saved ** 2),)


@register("exp")
def _(g, inputs, saved):
    return (g * saved,)


class Tensor:
    def __init__(self, data, requires_grad=False, _op=None, _inputs=(), _saved=None):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._op, self._inputs, self._saved = _op, _inputs, _saved

    def _apply(self, op, data, inputs, saved=None):
        if any(t.requires_grad for t in inputs):
            return Tensor(data, True, op, inputs, saved)
        return Tensor(data)

    def _w(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._w(o)
        return self._apply("add", self.data + o.data, (self, o))

    def __mul__(self, o):
        o = self._w(o)
        return self._apply("mul", self.data * o.data, (self, o))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, o):
        return self._apply("matmul", self.data @ o.data, (self, o))

    def relu(self):
        return self._apply("relu", self.data.relu(), (self,))

    def sum(self):
        return self._apply("sum", self.data.sum(), (self,))

    def sigmoid(self):
        s = torch.sigmoid(self.data)
        return self._apply("sigmoid", s, (self,), s)

    def tanh(self):
        t = torch.tanh(self.data)
        return self._apply("tanh", t, (self,), t)

    def exp(self):
        e = torch.exp(self.data)
        return self._apply("exp", e, (self,), e)

    def backward(self, grad=None):
        indeg, nodes, frontier = {id(self): 0}, {id(self): self}, [self]
        while frontier:
            t = frontier.pop()
            for p in t._inputs:
                if id(p) not in nodes:
                    nodes[id(p)] = p
                    indeg[id(p)] = 0
                    frontier.append(p)
                indeg[id(p)] += 1
        g_of = {id(self): torch.ones_like(self.data) if grad is None else grad}
        queue = deque([self])
        while queue:
            t = queue.popleft()
            g = g_of.pop(id(t))
            if t._op is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t._inputs, GRAD_RULES[t._op](g, t._inputs, t._saved)):
                if p.requires_grad:
                    g_of[id(p)] = g_of[id(p)] + pg if id(p) in g_of else pg
                indeg[id(p)] -= 1
                if indeg[id(p)] == 0 and p.requires_grad:
                    queue.append(p)
            t._inputs, t._saved = (), None
