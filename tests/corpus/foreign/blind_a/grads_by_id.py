"""Autograd engine where gradients never live on the graph during backward.

During backward every gradient is kept in one dict keyed by ``id(tensor)``;
each op's backward rule returns its contributions as ``{id(input): grad}``
and the engine adds them in.  Only at the end are the finished gradients
copied onto ``.grad``.
"""
import contextlib

import torch

_enabled = True


@contextlib.contextmanager
def no_grad():
    global _enabled
    prev = _enabled
    _enabled = False
    try:
        yield
    finally:
        _enabled = prev


def _shrink(g, shape):
    """sum a broadcast gradient back to `shape`"""
    if g.dim() > len(shape):
        g = g.sum(dim=tuple(range(g.dim() - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(dim=axes, keepdim=True) if axes else g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._rule = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def _coerce(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def _out(self, data, inputs, rule):
        t = Tensor(data)
        if _enabled and any(i.requires_grad for i in inputs):
            t.requires_grad = True
            t._inputs = inputs
            t._rule = rule
        return t

    # ---------------- core ----------------
    def __add__(self, other):
        other = self._coerce(other)

        def rule(g):
            return {id(self): _shrink(g, self.data.shape), id(other): _shrink(g, other.data.shape)}

        return self._out(self.data + other.data, (self, other), rule)

    __radd__ = __add__

    def __mul__(self, other):
        other = self._coerce(other)

        def rule(g):
            return {id(self): _shrink(g * other.data, self.data.shape),
                    id(other): _shrink(g * self.data, other.data.shape)}

        return self._out(self.data * other.data, (self, other), rule)

    __rmul__ = __mul__

    def __matmul__(self, other):
        def rule(g):
            return {id(self): g @ other.data.T, id(other): self.data.T @ g}

        return self._out(self.data @ other.data, (self, other), rule)

    def relu(self):
        def rule(g):
            return {id(self): g * (self.data > 0).to(g.dtype)}

        return self._out(self.data.clamp_min(0), (self,), rule)

    def sum(self):
        def rule(g):
            return {id(self): g * torch.ones_like(self.data)}

        return self._out(self.data.sum(), (self,), rule)

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grad = torch.ones_like(self.data)

        # iterative post-order: inputs before the tensors computed from them
        order, seen, by_id = [], set(), {}
        stack = [(self, 0)]
        while stack:
            t, i = stack.pop()
            if i == 0:
                if id(t) in seen:
                    continue
                seen.add(id(t))
                by_id[id(t)] = t
            if i < len(t._inputs):
                stack.append((t, i + 1))
                child = t._inputs[i]
                if child.requires_grad and id(child) not in seen:
                    stack.append((child, 0))
            else:
                order.append(t)

        grads = {id(self): grad.to(self.data.dtype)}
        for t in reversed(order):
            g = grads[id(t)]
            if t._rule is None:
                continue
            for key, contribution in t._rule(g).items():
                if key not in by_id:  # input that does not require grad
                    continue
                grads[key] = grads[key] + contribution if key in grads else contribution

        for t in order:
            g = grads[id(t)]
            t.grad = g.clone() if t.grad is None else t.grad + g
            t._inputs, t._rule = (), None

    # ---------------- extensions ----------------
    def __neg__(self):
        return self._out(-self.data, (self,), lambda g: {id(self): -g})

    def __sub__(self, other):
        other = self._coerce(other)

        def rule(g):
            return {id(self): _shrink(g, self.data.shape), id(other): _shrink(-g, other.data.shape)}

        return self._out(self.data - other.data, (self, other), rule)

    def __rsub__(self, other):
        return self._coerce(other) - self

    def __truediv__(self, other):
        other = self._coerce(other)

        def rule(g):
            a, b = self.data, other.data
            return {id(self): _shrink(g / b, a.shape), id(other): _shrink(-g * a / (b * b), b.shape)}

        return self._out(self.data / other.data, (self, other), rule)

    def __rtruediv__(self, other):
        return self._coerce(other) / self

    def __pow__(self, p):
        return self._out(self.data ** p, (self,), lambda g: {id(self): g * p * self.data ** (p - 1)})

    def exp(self):
        y = self.data.exp()
        return self._out(y, (self,), lambda g: {id(self): g * y})

    def log(self):
        return self._out(self.data.log(), (self,), lambda g: {id(self): g / self.data})

    def sigmoid(self):
        s = torch.sigmoid(self.data)
        return self._out(s, (self,), lambda g: {id(self): g * s * (1 - s)})

    def mean(self):
        n = self.data.numel()
        return self._out(self.data.mean(), (self,), lambda g: {id(self): g * torch.ones_like(self.data) / n})

    @property
    def T(self):
        return self._out(self.data.T, (self,), lambda g: {id(self): g.T})

    def maximum(self, other):
        other = self._coerce(other)

        def rule(g):
            a, b = self.data, other.data
            share = (a > b).to(g.dtype) + 0.5 * (a == b).to(g.dtype)
            return {id(self): _shrink(g * share, a.shape), id(other): _shrink(g * (1 - share), b.shape)}

        return self._out(torch.maximum(self.data, other.data), (self, other), rule)

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        logp = torch.log_softmax(z, dim=1)
        rows = torch.arange(n)

        def rule(g):
            d = logp.exp()
            d[rows, target] -= 1.0
            return {id(self): g * d / n}

        return self._out(-logp[rows, target].mean(), (self,), rule)
