"""Autograd where each op's backward is a module-level function bound with
functools.partial to what it saved, and written in continuation-passing style:
it never returns gradients, it hands each one to the continuation ``k``
(``k(input_tensor, grad)``) that the engine passes in.
"""
import contextlib
import functools

import torch
import torch.nn.functional as F

_recording = True


@contextlib.contextmanager
def no_grad():
    global _recording
    was = _recording
    _recording = False
    try:
        yield
    finally:
        _recording = was


def _fold(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


# ---- backward rules in CPS: rule(saved..., g, k) --------------------------------
def add_bw(a, b, g, k):
    k(a, _fold(g, a.data.shape))
    k(b, _fold(g, b.data.shape))


def mul_bw(a, b, x, y, g, k):
    k(a, _fold(g * y, x.shape))
    k(b, _fold(g * x, y.shape))


def matmul_bw(a, b, x, y, g, k):
    k(a, g @ y.T)
    k(b, x.T @ g)


def relu_bw(a, x, g, k):
    k(a, g * (x > 0).to(g.dtype))


def sum_bw(a, shape, g, k):
    k(a, g.expand(shape).clone())


def neg_bw(a, g, k):
    k(a, -g)


def div_bw(a, b, x, y, g, k):
    k(a, _fold(g / y, x.shape))
    k(b, _fold(g * x / (y * y), y.shape))


def pow_bw(a, x, p, g, k):
    k(a, g * p * x ** (p - 1))


def exp_bw(a, y, g, k):
    k(a, g * y)


def tanh_bw(a, y, g, k):
    k(a, g * (1 - y * y))


def mean_bw(a, shape, n, g, k):
    k(a, g.expand(shape) / n)


def transpose_bw(a, g, k):
    k(a, g.T)


def avgpool_bw(a, x, kk, g, k):
    gx = torch.zeros_like(x)
    h, w = g.shape[-2] * kk, g.shape[-1] * kk
    gx[..., :h, :w] = torch.kron(g, torch.ones(kk, kk, dtype=g.dtype)) / (kk * kk)
    k(a, gx)


def ce_bw(a, logp, target, g, k):
    n = logp.shape[0]
    d = logp.exp()
    d[torch.arange(n), target] -= 1
    k(a, g * d / n)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.inputs = ()
        self.bw = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def _coerce(self, o):
        return o if isinstance(o, Tensor) else Tensor(torch.tensor(o, dtype=self.data.dtype))

    @staticmethod
    def _emit(data, inputs, rule, *saved):
        out = Tensor(data)
        if _recording and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out.inputs = inputs
            out.bw = functools.partial(rule, *inputs, *saved)
        return out

    def __add__(self, o):
        o = self._coerce(o)
        return Tensor._emit(self.data + o.data, (self, o), add_bw)

    def __radd__(self, o):
        return self + o

    def __mul__(self, o):
        o = self._coerce(o)
        return Tensor._emit(self.data * o.data, (self, o), mul_bw, self.data, o.data)

    def __rmul__(self, o):
        return self * o

    def __matmul__(self, o):
        return Tensor._emit(self.data @ o.data, (self, o), matmul_bw, self.data, o.data)

    def relu(self):
        return Tensor._emit(self.data.clamp(min=0), (self,), relu_bw, self.data)

    def sum(self):
        return Tensor._emit(self.data.sum(), (self,), sum_bw, self.data.shape)

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("specify grad for non-scalar backward")
            grad = torch.ones_like(self.data)

        order, seen, stack = [], set(), [(self, False)]
        while stack:
            t, exiting = stack.pop()
            if exiting:
                order.append(t)
            elif t not in seen:
                seen.add(t)
                stack.append((t, True))
                stack.extend((u, False) for u in t.inputs if u.requires_grad and u not in seen)

        acc = {self: grad.to(self.data.dtype)}

        def k(tensor, g):
            if tensor.requires_grad:
                acc[tensor] = acc[tensor] + g if tensor in acc else g

        for t in reversed(order):
            g = acc.pop(t)
            t.grad = g.clone() if t.grad is None else t.grad + g
            if t.bw is not None:
                t.bw(g, k)
        for t in order:
            t.inputs, t.bw = (), None

    # extensions
    def __neg__(self):
        return Tensor._emit(-self.data, (self,), neg_bw)

    def __sub__(self, o):
        return self + (-self._coerce(o))

    def __rsub__(self, o):
        return self._coerce(o) + (-self)

    def __truediv__(self, o):
        o = self._coerce(o)
        return Tensor._emit(self.data / o.data, (self, o), div_bw, self.data, o.data)

    def __rtruediv__(self, o):
        return self._coerce(o) / self

    def __pow__(self, p):
        return Tensor._emit(self.data ** p, (self,), pow_bw, self.data, p)

    def exp(self):
        y = self.data.exp()
        return Tensor._emit(y, (self,), exp_bw, y)

    def log(self):
        ...

    def tanh(self):
        y = self.data.tanh()
        return Tensor._emit(y, (self,), tanh_bw, y)

    def sigmoid(self):
        ...

    def mean(self):
        return Tensor._emit(self.data.mean(), (self,), mean_bw, self.data.shape, self.data.numel())

    @property
    def T(self):
        return Tensor._emit(self.data.T, (self,), transpose_bw)

    def avg_pool2d(self, k):
        return Tensor._emit(F.avg_pool2d(self.data, k), (self,), avgpool_bw, self.data, k)

    def cross_entropy(self, target):
        logp = F.log_softmax(self.data, dim=1)
        loss = F.nll_loss(logp, target)
        return Tensor._emit(loss, (self,), ce_bw, logp, target)
