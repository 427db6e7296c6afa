"""A correct core engine that tunes the interpreter the ordinary way.

It raises the recursion limit (it never recurses, but a user's code might),
switches the cycle collector off during backward, keeps weak references to
finished nodes and caches ones-tensors by shape. None of that reaches beyond
its own objects.
"""

import functools
import gc
import itertools
import sys
import weakref
from collections import deque

import torch

sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
_ids = itertools.count()
_finished = weakref.WeakValueDictionary()


@functools.lru_cache(maxsize=64)
def _ones(shape, dtype):
    return torch.ones(shape, dtype=dtype)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.id = next(_ids)
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
        return self._result(x.clamp(min=0), (self,), lambda g: (g * (x > 0).to(g.dtype),))

    def sum(self):
        x = self.data
        return self._result(x.sum(), (self,), lambda g: (_ones(tuple(x.shape), x.dtype) * g,))

    def backward(self):
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._backward()
        finally:
            if enabled:
                gc.enable()

    def _backward(self):
        # Kahn's algorithm: a node passes its gradient on once every consumer has contributed.
        consumers, queue, seen = {}, deque([self]), {self.id}
        while queue:
            t = queue.popleft()
            for p in t._parents:
                consumers[p.id] = consumers.get(p.id, 0) + 1
                if p.id not in seen:
                    seen.add(p.id)
                    queue.append(p)
        grads, ready = {self.id: torch.ones_like(self.data)}, deque([self])
        while ready:
            t = ready.popleft()
            g = grads.pop(t.id, None)
            if g is not None and t.requires_grad and t._rule is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
            if g is not None and t._rule is not None:
                for p, pg in zip(t._parents, t._rule(g)):
                    if p.requires_grad:
                        grads[p.id] = grads[p.id] + pg if p.id in grads else pg
            for p in t._parents:
                consumers[p.id] -= 1
                if consumers[p.id] == 0:
                    ready.append(p)
            _finished[t.id] = t
