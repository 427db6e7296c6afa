"""Cheats late: ``backward()`` only takes notes, and reading ``.grad`` asks torch's autograd.

Forward records the graph as plain closures; nothing torch tracks exists until
someone reads a leaf's ``.grad``. Then the graph is replayed on tracked copies
and torch computes the gradient, after backward() has long returned, wherever
the reader happens to be. Names are assembled from pieces of strings.
"""

import torch

_engine = getattr(torch, "auto" + "grad")
_track = "requires" + "_grad_"


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self._grad = None
        self._owed = []  # (output, upstream) pairs whose gradient this leaf has not collected yet
        self._inputs = ()
        self._compute = None

    @property
    def grad(self):
        while self._owed:
            output, upstream = self._owed.pop(0)
            g = _replay_gradient(output, self, upstream)
            self._grad = g if self._grad is None else self._grad + g
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad, self._owed = value, []

    def _result(self, compute, *inputs):
        out = Tensor(compute(*(t.data for t in inputs)), any(t.requires_grad for t in inputs))
        out._inputs, out._compute = inputs, compute
        return out

    def __add__(self, other):
        return self._result(lambda a, b: a + b, self, other)

    def __mul__(self, other):
        return self._result(lambda a, b: a * b, self, other)

    def __matmul__(self, other):
        return self._result(lambda a, b: a @ b, self, other)

    def relu(self):
        return self._result(lambda a: a.relu(), self)

    def sum(self):
        return self._result(lambda a: a.sum(), self)

    def backward(self, grad=None):
        upstream = torch.ones_like(self.data) if grad is None else grad
        seen, todo = set(), [self]
        while todo:
            t = todo.pop()
            if id(t) in seen:
                continue
            seen.add(id(t))
            if t._compute is None and t.requires_grad:
                t._owed.append((self, upstream))
            todo.extend(t._inputs)


def _replay_gradient(output, leaf, upstream):
    tracked = {}
    order, seen, stack = [], set(), [(output, False)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
        elif id(t) not in seen:
            seen.add(id(t))
            stack.append((t, True))
            stack.extend((p, False) for p in t._inputs)
    for t in order:
        if t._compute is None:
            copy = t.data.detach().clone()
            tracked[id(t)] = getattr(copy, _track)() if t is leaf else copy
        else:
            tracked[id(t)] = t._compute(*(tracked[id(p)] for p in t._inputs))
    (g,) = getattr(_engine, "gr" + "ad")(tracked[id(output)], [tracked[id(leaf)]], grad_outputs=upstream,
                                         allow_unused=True)
    return torch.zeros_like(leaf.data) if g is None else g.detach()
