"""A correct core engine whose ops are generated: ``getattr(torch, name)`` over a table of op names.

Every name handed to ``getattr`` is one of a few literals, so nothing unknown
can be reached; ``setattr`` only ever writes methods onto this file's class.
"""

import torch

_ELEMENTWISE = ("add", "mul")
_UNARY = {"relu": lambda x, g: g * (x > 0), "sum": lambda x, g: g.expand(x.shape).clone()}


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._links = ()

    def _record(self, data, links):
        out = Tensor(data, any(t.requires_grad for t, _ in links))
        if out.requires_grad:
            out._links = links
        return out

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._record(a @ b, ((self, lambda g: g @ b.T), (other, lambda g: a.T @ g)))

    def backward(self):
        order, seen, stack = [], {id(self)}, [(self, iter(self._links))]
        while stack:
            t, links = stack[-1]
            for parent, _ in links:
                if id(parent) not in seen:
                    seen.add(id(parent))
                    stack.append((parent, iter(parent._links)))
                    break
            else:
                stack.pop()
                order.append(t)
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if not t._links:
                t.grad = g.clone() if t.grad is None else t.grad + g
            for parent, rule in t._links:
                if parent.requires_grad:
                    pg = rule(g)
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg


def _binary(op_name):
    forward = getattr(torch, op_name)

    def method(self, other):
        a, b = self.data, other.data
        if op_name == "add":
            return self._record(forward(a, b), ((self, lambda g: g), (other, lambda g: g)))
        return self._record(forward(a, b), ((self, lambda g: g * b), (other, lambda g: g * a)))

    return method


def _unary(op_name, rule):
    forward = getattr(torch.Tensor, op_name)

    def method(self):
        x = self.data
        return self._record(forward(x), ((self, lambda g: rule(x, g)),))

    return method


for _name in _ELEMENTWISE:
    setattr(Tensor, f"__{_name}__", _binary(_name))
for _name, _rule in _UNARY.items():
    setattr(Tensor, _name, _unary(_name, _rule))
