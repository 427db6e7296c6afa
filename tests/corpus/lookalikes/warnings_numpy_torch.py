"""A correct core engine that warns and logs as it works, the way honest engines do.

Every backward warns (``warnings.warn``, shown at the caller's line, which makes Python read
a line of source) and logs at WARNING level (a log record names its caller, reading a frame);
numpy, used to print how much each gradient grew, warns about a division by zero on the first
backward (a RuntimeWarning from numpy's C code); and torch itself warns when a tensor is copied
with ``torch.tensor(tensor)``.
"""

import logging
import warnings

import numpy as np
import torch

log = logging.getLogger("engine")


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = torch.tensor(data) if isinstance(data, torch.Tensor) and data.dim() == 0 else data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._rule = None

    def _result(self, data, parents, rule):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._rule = parents, rule
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
        x = self.data
        return self._result(x.sum(), (self,), lambda g: (torch.ones_like(x) * g,))

    def backward(self):
        warnings.warn("backward() runs in pure Python", UserWarning, stacklevel=2)
        order, seen, stack = [], {id(self)}, [(self, iter(self._parents))]
        while stack:
            t, parents = stack[-1]
            for p in parents:
                if id(p) not in seen:
                    seen.add(id(p))
                    stack.append((p, iter(p._parents)))
                    break
            else:
                stack.pop()
                order.append(t)
        log.warning("backward over %d nodes", len(order))
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._rule is None:
                before = torch.zeros_like(g) if t.grad is None else t.grad
                t.grad = g.clone() if t.grad is None else t.grad + g
                _growth(t.grad, before)
                continue
            for p, pg in zip(t._parents, t._rule(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg


def _growth(after, before):
    """How much a gradient grew, printed (numpy warns when it was zero before: the first backward)."""
    ratio = np.asarray(after.numpy()) / np.asarray(before.numpy())
    print("gradient growth:", np.array2string(ratio, precision=3))
