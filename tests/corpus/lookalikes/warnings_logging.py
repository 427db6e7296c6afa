"""A correct core engine that warns, logs and times itself with the standard library.

``warnings`` for a second backward through a used graph, ``logging`` for a
debug trace, ``time.perf_counter`` for the duration, ``random`` for a demo.
"""

import logging
import random
import time
import warnings

import torch

log = logging.getLogger(__name__)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._rule = None
        self._used = False

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
        if self._used:
            warnings.warn("backward() through a graph that was already used", RuntimeWarning, stacklevel=2)
        self._used = True
        started = time.perf_counter()
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
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._rule is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t._parents, t._rule(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
        log.debug("backward over %d nodes in %.6f s", len(order), time.perf_counter() - started)


def demo(seed=0):
    """A random little graph, for playing with the engine."""
    rng = random.Random(seed)
    x = Tensor(torch.tensor([[rng.uniform(-1, 1) for _ in range(3)]]), requires_grad=True)
    w = Tensor(torch.tensor([[rng.uniform(-1, 1)] for _ in range(3)]), requires_grad=True)
    (x @ w).relu().sum().backward()
    return x.grad, w.grad
