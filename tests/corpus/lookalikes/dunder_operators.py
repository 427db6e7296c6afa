"""A correct core engine that is mostly dunder methods: operators, slots, hashing, delegation.

``__getattr__`` hands unknown attributes (``shape``, ``dtype``) to the torch
tensor; ``type(self)`` and ``self.__class__`` build results; nothing here
walks interpreter internals.
"""

import torch


class Tensor:
    __slots__ = ("data", "requires_grad", "grad", "_inputs", "_grad_rule", "__weakref__")

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._grad_rule = None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.data, name)

    def __repr__(self):
        return f"{type(self).__name__}({self.data!r}, requires_grad={self.requires_grad})"

    def __hash__(self):
        return id(self)

    def __len__(self):
        return len(self.data)

    def __bool__(self):
        return bool(self.data.numel())

    def _new(self, data, inputs, rule):
        out = self.__class__(data, any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out._inputs, out._grad_rule = inputs, rule
        return out

    def __add__(self, other):
        return self._new(self.data + other.data, (self, other), lambda g: (g, g))

    def __radd__(self, other):
        return self.__add__(other)

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._new(a * b, (self, other), lambda g: (g * b, g * a))

    def __rmul__(self, other):
        return self.__mul__(other)

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._new(a @ b, (self, other), lambda g: (g @ b.t(), a.t() @ g))

    def __neg__(self):
        return self._new(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-other)

    def relu(self):
        keep = self.data > 0
        return self._new(self.data * keep, (self,), lambda g: (g * keep,))

    def sum(self):
        shape = self.data.shape
        return self._new(self.data.sum(), (self,), lambda g: (torch.ones(shape, dtype=g.dtype) * g,))

    def backward(self):
        order, visited = [], {id(self)}
        stack = [(self, iter(self._inputs))]
        while stack:
            t, it = stack[-1]
            nxt = next((p for p in it if id(p) not in visited), None)
            if nxt is None:
                stack.pop()
                order.append(t)
            else:
                visited.add(id(nxt))
                stack.append((nxt, iter(nxt._inputs)))
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._grad_rule is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
            else:
                for p, pg in zip(t._inputs, t._grad_rule(g)):
                    if p.requires_grad:
                        grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
