"""Autograd where every op is an entry of a registry of lambdas.

``OPS[name] = (forward, (rule for input 0, rule for input 1, ...))``; a rule
maps ``(g, *input values, output value)`` to that input's gradient. Only the
generic ``_apply`` and ``backward`` know about graphs. backward() sorts the
reachable nodes by creation number (inputs are always created first).
Core, maximum, exp, a / b, a ** p, and Python numbers with + and *.
"""
import itertools

import torch

_clock = itertools.count()

OPS = {
    "add": (lambda a, b: a + b,
            (lambda g, a, b, o: g,
             lambda g, a, b, o: g)),
    "mul": (lambda a, b: a * b,
            (lambda g, a, b, o: g * b,
             lambda g, a, b, o: g * a)),
    "matmul": (lambda a, b: a @ b,
               (lambda g, a, b, o: g @ b.T,
                lambda g, a, b, o: a.T @ g)),
    "div": (lambda a, b: a / b,
            (lambda g, a, b, o: g / b,
             lambda g, a, b, o: -g * a / (b * b))),
    "maximum": (torch.maximum,
                (lambda g, a, b, o: g * (a >= b),
                 lambda g, a, b, o: g * (a >= b))),
    "relu": (torch.relu, (lambda g, a, o: g * (a > 0),)),
    "exp": (torch.exp, (lambda g, a, o: g * o,)),
    "sum": (lambda a: a.sum(), (lambda g, a, o: g * torch.ones_like(a),)),
}


def _pow_op(p):
    return (lambda a: a ** p, (lambda g, a, o: g * p * a ** (p - 1),))


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.stamp = next(_clock)
        self.inputs = ()
        self.rules = ()

    def _lift(self, x):
        if isinstance(x, Tensor):
            if x.data.shape != self.data.shape:
                raise ValueError("broadcasting is not supported")
            return x
        return Tensor(torch.tensor(x, dtype=self.data.dtype))

    @staticmethod
    def _apply(op, *inputs):
        forward, rules = op
        out = Tensor(forward(*(t.data for t in inputs)),
                     requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out.inputs = inputs
            out.rules = rules
        return out

    def __add__(self, other):
        return Tensor._apply(OPS["add"], self, self._lift(other))

    def __radd__(self, other):
        return Tensor._apply(OPS["add"], self._lift(other), self)

    def __mul__(self, other):
        return Tensor._apply(OPS["mul"], self, self._lift(other))

    def __rmul__(self, other):
        return Tensor._apply(OPS["mul"], self._lift(other), self)

    def __matmul__(self, other):
        return Tensor._apply(OPS["matmul"], self, other)

    def __truediv__(self, other):
        return Tensor._apply(OPS["div"], self, self._lift(other))

    def __pow__(self, p):
        return Tensor._apply(_pow_op(p), self)

    def maximum(self, other):
        return Tensor._apply(OPS["maximum"], self, self._lift(other))

    def relu(self):
        return Tensor._apply(OPS["relu"], self)

    def exp(self):
        return Tensor._apply(OPS["exp"], self)

    def sum(self):
        return Tensor._apply(OPS["sum"], self)

    def backward(self, grad=None):
        reach, stack = {id(self): self}, [self]
        while stack:
            for x in stack.pop().inputs:
                if id(x) not in reach:
                    reach[id(x)] = x
                    stack.append(x)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in sorted(reach.values(), key=lambda t: t.stamp, reverse=True):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if not node.rules:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            values = [x.data for x in node.inputs]
            for x, rule in zip(node.inputs, node.rules):
                if x.requires_grad:
                    gx = rule(g, *values, node.data)
                    grads[id(x)] = grads[id(x)] + gx if id(x) in grads else gx
