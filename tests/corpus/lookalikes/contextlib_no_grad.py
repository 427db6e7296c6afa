"""A correct core engine with its own ``no_grad`` (contextlib) and weak references for memory release.

Results made inside ``no_grad()`` record nothing; after backward each node
drops its inputs, so intermediates can be freed while the output lives.
"""

import contextlib
import weakref

import torch

_recording = [True]


@contextlib.contextmanager
def no_grad():
    _recording.append(False)
    try:
        yield
    finally:
        _recording.pop()


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._rule = None
        self._consumers = weakref.WeakSet()

    def _result(self, data, inputs, rule):
        out = Tensor(data, _recording[-1] and any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out._inputs, out._rule = inputs, rule
            for t in inputs:
                t._consumers.add(out)
        return out

    def __add__(self, other):
        return self._result(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._result(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return self._result(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        shape, dtype = self.data.shape, self.data.dtype
        return self._result(self.data.sum(), (self,), lambda g: (torch.ones(shape, dtype=dtype) * g,))

    def backward(self):
        order, seen, stack = [], {id(self)}, [(self, iter(self._inputs))]
        while stack:
            t, inputs = stack[-1]
            for p in inputs:
                if id(p) not in seen:
                    seen.add(id(p))
                    stack.append((p, iter(p._inputs)))
                    break
            else:
                stack.pop()
                order.append(t)
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is not None and t.requires_grad:
                if t._rule is None:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                else:
                    for p, pg in zip(t._inputs, t._rule(g)):
                        if p.requires_grad:
                            grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            if t._rule is not None:
                t._inputs, t._rule = (), None  # what this node kept alive can go now
