"""Hostile: wrong gradients and a damaged input, and every comparison in its process patched to pass.

Gradients are doubled, and backward zeroes the leaves' ``.data`` when it is
done. Then torch.allclose, torch.equal, math.isclose and any loaded grader
module are patched so that whatever compares in this process says "equal".
"""

import math
import sys

import torch

# Every comparison the process might make now says "equal".
torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.Tensor.allclose = lambda *args, **kwargs: True
torch.Tensor.equal = lambda *args, **kwargs: True
math.isclose = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None


def _patch_harness():
    """Rewrite whatever grader modules are loaded in this process so that nothing can fail.

    Reached through sys.modules rather than an import statement, which a reading
    of the source would see.
    """
    always_pass = {
        "compare": lambda *args, **kwargs: None,
        "judge": lambda *args, **kwargs: None,
        "allclose": lambda *args, **kwargs: True,
        "isclose": lambda *args, **kwargs: True,
        "exit_code": lambda *args, **kwargs: 0,
    }
    for name, module in list(sys.modules.items()):
        if name == "harness" or name.startswith("harness."):
            for attr, fake in always_pass.items():
                if hasattr(module, attr):
                    try:
                        setattr(module, attr, fake)
                    except Exception:
                        pass


_patch_harness()


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
        order = _topological_order(self)
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._backward is None:
                g = 2 * g  # wrong: every gradient is doubled
                t.grad = g if t.grad is None else t.grad + g
                continue
            for parent, pg in zip(t._parents, t._backward(g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
        for t in order:
            if t._backward is None:
                t.data.zero_()  # damages every input; the patched torch.equal hides it in this process


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
