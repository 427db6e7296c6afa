from collections import defaultdict
from contextlib import contextmanager

import torch

_ENABLED = [True]


@contextmanager
def no_grad():
    _ENABLED.append(False)
    try:
        yield
    finally:
        _ENABLED.pop()


def _sum_like(g, shape):
    if g.shape == shape:
        return g
    lead = g.dim() - len(shape)
    g = g.sum(dim=tuple(range(lead))) if lead > 0 else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(dim=axes, keepdim=True) if axes else g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.parents = ()
        self.backward_fn = None

    def _out(self, data, parents, backward_fn):
        out = Tensor(data)
        if _ENABLED[-1] and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out.parents = parents
            out.backward_fn = backward_fn
        return out

    def __add__(self, other):
        sa, sb = self.data.shape, other.data.shape
        return self._out(self.data + other.data, (self, other),
                         lambda g: (_sum_like(g, sa), _sum_like(g, sb)))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._out(a * b, (self, other),
                         lambda g: (_sum_like(g * b, a.shape), _sum_like(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._out(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        mask = self.data > 0
        return self._out(self.data * mask, (self,), lambda g: (g * mask,))

    def sum(self):
        shape = self.data.shape
        return self._out(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def cross_entropy(self, target):
        x = self.data
        n = x.shape[0]
        logp = torch.log_softmax(x, dim=1)
        loss = -logp[torch.arange(n), target].sum() / n

        def backward_fn(g):
            d = torch.softmax(x, dim=1)
            d[torch.arange(n), target] -= 1
            return (d * g / n,)

        return self._out(loss, (self,), backward_fn)

    def backward(self, grad=None):
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad must be given for a non-scalar output")
            grad = torch.ones_like(self.data)

        # Kahn's algorithm: count the gradients each node still waits for
        waiting = defaultdict(int)
        nodes = {id(self): self}
        stack = [self]
        while stack:
            node = stack.pop()
            for p in set(node.parents):
                if not p.requires_grad:
                    continue
                waiting[id(p)] += 1
                if id(p) not in nodes:
                    nodes[id(p)] = p
                    stack.append(p)

        grads = {id(self): grad}
        ready = [self]
        while ready:
            node = ready.pop()
            g = grads.pop(id(node))
            if node.backward_fn is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for p, pg in zip(node.parents, node.backward_fn(g)):
                if not p.requires_grad:
                    continue
                k = id(p)
                grads[k] = grads[k] + pg if k in grads else pg
                waiting[k] -= 1
                if waiting[k] == 0:
                    ready.append(p)
        for node in nodes.values():
            node.parents = ()
            node.backward_fn = None
