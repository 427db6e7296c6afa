"""Hostile: starts a ``sleep`` that outlives it at import, and backward never returns."""

import os
import subprocess

import torch

# A grandchild in the same process group that inherits stdin/stdout/stderr and is never waited for:
# a grader that reads the worker's output to the end, or kills only the worker, is stuck with it.
# The grader's tests choose an odd duration so that they can find this process afterwards.
# The worker may start no process: where that holds, the attempt is refused and the rest still runs.
try:
    _SLEEPER = subprocess.Popen(["sleep", os.environ.get("GRADER_TEST_SLEEP_SECONDS", "1000.123")])
except OSError:
    _SLEEPER = None


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._backward = None  # output gradient -> one gradient per parent

    def _result(self, data, parents, backward):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._backward = parents, backward
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
        return self._result(x.sum(), (self,), lambda g: (g * torch.ones_like(x),))

    def backward(self):
        while True:
            pass


def _topological_order(root):
    order, visited = [], {id(root)}
    stack = [(root, iter(root._parents))]
    while stack:
        t, parents = stack[-1]
        for p in parents:
            if id(p) not in visited:
                visited.add(id(p))
                stack.append((p, iter(p._parents)))
                break
        else:
            stack.pop()
            order.append(t)
    return order
