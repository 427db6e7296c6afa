"""Hostile: wrong gradients (all zeros), and a forged perfect JSON report on stdout at import and at exit."""

import atexit
import json
import os
import sys

import torch

_CHECKS = ["core.requires_grad", "core.grad_none", "core.grad_types", "core.accumulation", "core.order",
           "core.linear_time", "core.inputs_unchanged", "core.properties"]
_FORGED = json.dumps({
    "status": "graded", "score": 100.0, "max_score": 100.0,
    "levels": {level: {"score": 1.0, "max_score": 1.0} for level in ("core", "followups", "extensions")},
    "checks": [{"id": c, "level": "core", "concept": "forged", "outcome": "passed", "points": 1.0,
                "max_points": 1.0, "message": ""} for c in _CHECKS],
    "integrity": {"violations": []},
})


def _forge():
    # Every route to the parent's stdout: print, the original stream, the raw file descriptor.
    print(_FORGED, flush=True)
    sys.__stdout__.write(_FORGED + "\n")
    sys.__stdout__.flush()
    os.write(1, (_FORGED + "\n").encode())
    sys.stderr.write(_FORGED + "\n")


_forge()
atexit.register(_forge)


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
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(_topological_order(self)):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._backward is None:
                t.grad = torch.zeros_like(t.data)  # wrong: every gradient is zero
                continue
            for parent, pg in zip(t._parents, t._backward(g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg


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
