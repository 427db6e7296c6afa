"""Written with a tiny language model in mind: embedding lookup (`W[ids]`), matmul,
fused cross-entropy, mean. Gradients flow through a reverse topological order kept in
a list; `no_grad` is a class-level switch."""

import contextlib

import torch


class Tensor:
    grad_enabled = True

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.parents = ()
        self.back = None

    @classmethod
    def _result(cls, data, parents, back):
        t = cls(data)
        if cls.grad_enabled and any(p.requires_grad for p in parents):
            t.requires_grad, t.parents, t.back = True, parents, back
        return t

    @staticmethod
    def _fit(g, shape):
        while g.dim() > len(shape):
            g = g.sum(0)
        for i, n in enumerate(shape):
            if n == 1 and g.shape[i] != 1:
                g = g.sum(i, keepdim=True)
        return g

    def _t(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._t(o)
        return Tensor._result(self.data + o.data, (self, o),
                              lambda g: (self._fit(g, self.data.shape), self._fit(g, o.data.shape)))

    def __mul__(self, o):
        o = self._t(o)
        return Tensor._result(self.data * o.data, (self, o),
                              lambda g: (self._fit(g * o.data, self.data.shape), self._fit(g * self.data, o.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, o):
        return Tensor._result(self.data @ o.data, (self, o), lambda g: (g @ o.data.T, self.data.T @ g))

    def relu(self):
        return Tensor._result(self.data.relu(), (self,), lambda g: (g * (self.data > 0),))

    def sum(self):
        return Tensor._result(self.data.sum(), (self,), lambda g: (g * torch.ones_like(self.data),))

    def mean(self):
        n = self.data.numel()
        return Tensor._result(self.data.mean(), (self,), lambda g: (g * torch.ones_like(self.data) / n,))

    def __getitem__(self, ids):
        def back(g):
            gw = torch.zeros_like(self.data)
            gw[ids] = g
            return (gw,)
        return Tensor._result(self.data[ids], (self,), back)

    def cross_entropy(self, target):
        x = self.data
        n = x.shape[0]
        shifted = x - x.max(dim=1, keepdim=True).values
        logz = shifted.exp().sum(dim=1, keepdim=True).log()
        logp = shifted - logz
        rows = torch.arange(n)

        def back(g):
            d = logp.exp()
            d[rows, target] -= 1
            return (g * d / n,)
        return Tensor._result(-logp[rows, target].mean(), (self,), back)

    def backward(self, grad=None):
        topo, seen, stack = [], set(), [(self, False)]
        while stack:
            t, expanded = stack.pop()
            if expanded:
                topo.append(t)
            elif id(t) not in seen:
                seen.add(id(t))
                stack.append((t, True))
                stack.extend((p, False) for p in t.parents if id(p) not in seen)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(topo):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.back is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t.parents, t.back(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            t.parents, t.back = (), None


@contextlib.contextmanager
def no_grad():
    old = Tensor.grad_enabled
    Tensor.grad_enabled = False
    try:
        yield
    finally:
        Tensor.grad_enabled = old
