"""Reverse-mode autodiff.

A backward pass is an object: ``BackwardPass(root)`` sorts the graph, owns the
gradient buffers, and is handed explicitly to every node's ``_propagate``,
which reports each input's gradient with ``bp.send(input, grad)``.
"""
import contextlib

import torch
import torch.nn.functional as F


class _GradSwitch:
    on = True


class no_grad(contextlib.ContextDecorator):
    """with no_grad(): ...  -- results record nothing and need no grad."""

    def __enter__(self):
        _GradSwitch.on = False
        return self

    def __exit__(self, *exc):
        _GradSwitch.on = True
        return False


def _collapse(g, shape):
    if g.shape == shape:
        return g
    while g.dim() > len(shape):
        g = g.sum(0)
    dims = tuple(i for i, s in enumerate(shape) if s == 1)
    return g.sum(dims, keepdim=True) if dims else g


class BackwardPass:
    def __init__(self, root):
        self.root = root
        self.buffers = {}
        self.order = self._sorted(root)

    @staticmethod
    def _sorted(root):
        """Inputs before the tensors made from them; explicit stack, no recursion."""
        out, state = [], {}
        stack = [root]
        while stack:
            t = stack.pop()
            if state.get(t) == "done":
                continue
            if state.get(t) == "open":
                state[t] = "done"
                out.append(t)
                continue
            state[t] = "open"
            stack.append(t)
            for p in t._inputs:
                if p.requires_grad and p not in state:
                    stack.append(p)
        return out

    def send(self, tensor, g):
        if not tensor.requires_grad:
            return
        if tensor in self.buffers:
            self.buffers[tensor] = self.buffers[tensor] + g
        else:
            self.buffers[tensor] = g

    def run(self, seed):
        self.send(self.root, seed)
        for t in reversed(self.order):
            g = self.buffers.pop(t)
            t.grad = g.clone() if t.grad is None else t.grad + g
            if t._propagate is not None:
                t._propagate(self, g)
        for t in self.order:
            t._inputs, t._propagate = (), None


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._propagate = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def _as(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    @staticmethod
    def _from(data, inputs, propagate):
        out = Tensor(data)
        if _GradSwitch.on and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._inputs = inputs
            out._propagate = propagate
        return out

    # core
    def __add__(self, other):
        other = self._as(other)
        a, b = self, other

        def propagate(bp, g):
            bp.send(a, _collapse(g, a.data.shape))
            bp.send(b, _collapse(g, b.data.shape))

        return Tensor._from(a.data + b.data, (a, b), propagate)

    __radd__ = __add__

    def __mul__(self, other):
        other = self._as(other)
        a, b = self, other
        x, y = a.data, b.data

        def propagate(bp, g):
            bp.send(a, _collapse(g * y, x.shape))
            bp.send(b, _collapse(g * x, y.shape))

        return Tensor._from(x * y, (a, b), propagate)

    __rmul__ = __mul__

    def __matmul__(self, other):
        a, b = self, other
        x, y = a.data, b.data

        def propagate(bp, g):
            bp.send(a, g @ y.T)
            bp.send(b, x.T @ g)

        return Tensor._from(x @ y, (a, b), propagate)

    def relu(self):
        x = self.data

        def propagate(bp, g):
            bp.send(self, g * (x > 0).to(g.dtype))

        return Tensor._from(F.relu(x), (self,), propagate)

    def sum(self):
        x = self.data

        def propagate(bp, g):
            bp.send(self, torch.ones_like(x) * g)

        return Tensor._from(x.sum(), (self,), propagate)

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("tensor does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grad = torch.ones_like(self.data)
        BackwardPass(self).run(grad.to(self.data.dtype))

    # extensions
    def __neg__(self):
        def propagate(bp, g):
            bp.send(self, -g)

        return Tensor._from(-self.data, (self,), propagate)

    def __sub__(self, other):
        return self + (-self._as(other))

    def __rsub__(self, other):
        return self._as(other) + (-self)

    def __truediv__(self, other):
        return self * self._as(other) ** -1

    def __rtruediv__(self, other):
        return self._as(other) * self ** -1

    def __pow__(self, p):
        x = self.data

        def propagate(bp, g):
            bp.send(self, g * p * x ** (p - 1))

        return Tensor._from(x ** p, (self,), propagate)

    def exp(self):
        y = self.data.exp()

        def propagate(bp, g):
            bp.send(self, g * y)

        return Tensor._from(y, (self,), propagate)

    def log(self):
        x = self.data

        def propagate(bp, g):
            bp.send(self, g / x)

        return Tensor._from(x.log(), (self,), propagate)

    def sigmoid(self):
        y = torch.sigmoid(self.data)

        def propagate(bp, g):
            bp.send(self, g * y * (1 - y))

        return Tensor._from(y, (self,), propagate)

    def tanh(self):
        y = torch.tanh(self.data)

        def propagate(bp, g):
            bp.send(self, g * (1 - y * y))

        return Tensor._from(y, (self,), propagate)

    def mean(self):
        x = self.data

        def propagate(bp, g):
            bp.send(self, torch.ones_like(x) * g / x.numel())

        return Tensor._from(x.mean(), (self,), propagate)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        old = self.data.shape

        def propagate(bp, g):
            bp.send(self, g.reshape(old))

        return Tensor._from(self.data.reshape(shape), (self,), propagate)

    def __getitem__(self, ids):
        W = self.data

        def propagate(bp, g):
            gW = torch.zeros_like(W)
            gW.index_add_(0, ids.reshape(-1), g.reshape(-1, *W.shape[1:]))
            bp.send(self, gW)

        return Tensor._from(W[ids], (self,), propagate)

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        logp = z - torch.logsumexp(z, 1, keepdim=True)
        rows = torch.arange(n)

        def propagate(bp, g):
            d = logp.exp()
            d[rows, target] -= 1
            bp.send(self, g * d / n)

        return Tensor._from(-logp[rows, target].mean(), (self,), propagate)
