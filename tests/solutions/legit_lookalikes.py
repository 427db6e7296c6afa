"""A correct engine that only looks like it might lean on torch's autograd.

It never does: torch.autograd is not used anywhere below (this docstring, the
comments and one error message mention it on purpose). What a careless reader
might flag: ``torch.no_grad()`` around the raw forward computations,
``.detach()``, members called ``grad``, ``requires_grad`` and ``backward``, a
``requires_grad=False`` keyword, a ``no_grad`` class of its own, and a self-test
under ``if __name__ == "__main__":`` that calls ``.backward()``.
Core plus broadcasting, upstream gradients, accumulation across passes,
``no_grad``, deep graphs, memory release and cross-entropy.
"""

from __future__ import annotations

import torch

_NOT_TORCH = "this engine computes every gradient itself; torch.autograd.grad is never called"


class no_grad:
    """Inside ``with no_grad():`` results record nothing (a class, not a generator)."""

    enabled = True

    def __enter__(self):
        self.previous, no_grad.enabled = no_grad.enabled, False
        return self

    def __exit__(self, *exc):
        no_grad.enabled = self.previous
        return False


def _reduce_to(g, shape):
    if g.shape == shape:
        return g
    g = g.sum(dim=tuple(range(g.dim() - len(shape)))) if g.dim() > len(shape) else g
    keep = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return (g.sum(dim=keep, keepdim=True) if keep else g).reshape(shape)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._created_by = None  # (parents, rule) for results, None for leaves
        self._is_result = False

    @staticmethod
    def _make(compute, parents, rule):
        # Torch must not record anything for the raw values: they are storage only.
        with torch.no_grad():
            data = compute()
        out = Tensor(data, no_grad.enabled and any(p.requires_grad for p in parents))
        out._is_result = True
        if out.requires_grad:
            out._created_by = (parents, rule)
        return out

    def __add__(self, other):
        return Tensor._make(lambda: self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return Tensor._make(lambda: a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._make(lambda: a @ b, (self, other), lambda g: (g @ b.t(), a.t() @ g))

    def relu(self):
        mask = (self.data > 0).to(self.data.dtype)
        return Tensor._make(lambda: self.data * mask, (self,), lambda g: (g * mask,))

    def sum(self):
        shape = self.data.shape
        return Tensor._make(lambda: self.data.sum(), (self,), lambda g: (g.detach().expand(shape).clone(),))

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        log_softmax = z - torch.logsumexp(z, dim=1, keepdim=True)
        onehot = torch.zeros_like(z, requires_grad=False)
        onehot[torch.arange(n), target] = 1.0
        return Tensor._make(lambda: -(log_softmax * onehot).sum() / n, (self,),
                            lambda g: ((log_softmax.exp() - onehot) * g / n,))

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad; " + _NOT_TORCH)
        seed = torch.ones_like(self.data) if grad is None else grad.detach()
        # Post-order of an iterative depth-first search; a tensor is expanded on its first pop.
        order, expanded, stack = [], set(), [(self, False)]
        while stack:
            t, finished = stack.pop()
            if finished:
                order.append(t)
                continue
            if id(t) in expanded:
                continue
            expanded.add(id(t))
            stack.append((t, True))
            for p in (t._created_by[0] if t._created_by else ()):
                if id(p) not in expanded and p.requires_grad:
                    stack.append((p, False))
        pending = {id(self): seed}
        for t in reversed(order):
            g = pending.pop(id(t), None)
            if g is None:
                continue
            if not t._is_result:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            if t._created_by is None:
                continue
            parents, rule = t._created_by
            t._created_by = None  # free what this node kept alive
            for p, pg in zip(parents, rule(g)):
                if p.requires_grad:
                    pg = _reduce_to(pg, p.data.shape)
                    pending[id(p)] = pending[id(p)] + pg if id(p) in pending else pg


if __name__ == "__main__":
    # Self-test with the interview's own example; torch.autograd is not needed to check it.
    x = Tensor(torch.tensor([[1.0, 2.0]]), requires_grad=True)
    W = Tensor(torch.tensor([[1.0, -1.0], [0.5, -2.0]]), requires_grad=True)
    (x @ W).relu().sum().backward()
    assert x.grad.tolist() == [[1.0, 0.5]] and W.grad.tolist() == [[1.0, 0.0], [2.0, 0.0]]
    a = Tensor(torch.tensor(3.0), requires_grad=True)
    (a * a + a).backward()
    assert a.grad.item() == 7.0
    print("self-test passed")
