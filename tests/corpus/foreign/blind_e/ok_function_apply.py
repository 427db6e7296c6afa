"""Reverse-mode autograd over torch tensors, organised like torch.autograd.Function.

Every op is a subclass of ``Function`` with a ``forward`` and a ``backward``
working on raw torch tensors; ``Function.apply`` wraps the result in a Tensor
and records a ``Context`` (the node) when some input requires grad.
"""

from __future__ import annotations

import contextlib
import numbers

import torch
import torch.nn.functional as F

_grad_mode = [True]


@contextlib.contextmanager
def no_grad():
    _grad_mode.append(False)
    try:
        yield
    finally:
        _grad_mode.pop()


def _recording() -> bool:
    return _grad_mode[-1]


def _sum_to(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Reduce a broadcast gradient back to ``shape``."""
    if g.shape == shape:
        return g
    extra = g.dim() - len(shape)
    if extra > 0:
        g = g.sum(dim=tuple(range(extra)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    return g.reshape(shape)


class Context:
    """One node of the graph: the function that ran, its inputs, what it saved."""

    def __init__(self, fn, inputs):
        self.fn = fn
        self.inputs = inputs
        self.saved = ()
        self.needs = tuple(isinstance(t, Tensor) and t.requires_grad for t in inputs)

    def save_for_backward(self, *tensors):
        self.saved = tensors


class Function:
    @staticmethod
    def forward(ctx, *args):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs):
        raw = [x.data if isinstance(x, Tensor) else x for x in inputs]
        needs_grad = _recording() and any(isinstance(x, Tensor) and x.requires_grad for x in inputs)
        ctx = Context(cls, inputs) if needs_grad else None
        out = cls.forward(ctx if ctx is not None else _Scratch(), *raw)
        result = Tensor(out, requires_grad=needs_grad)
        result._ctx = ctx
        return result


class _Scratch:
    """Stand-in context when nothing is recorded (no_grad, constants)."""

    def save_for_backward(self, *tensors):
        pass


def _as_operand(x, like: torch.Tensor):
    if isinstance(x, Tensor):
        return x
    if isinstance(x, numbers.Number):
        return Tensor(torch.tensor(x, dtype=like.dtype))
    if isinstance(x, torch.Tensor):
        return Tensor(x)
    return NotImplemented


# ---------------------------------------------------------------- functions


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (a.shape, b.shape)
        return a + b

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        return _sum_to(g, sa), _sum_to(g, sb)


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (a.shape, b.shape)
        return a - b

    @staticmethod
    def backward(ctx, g):
        sa, sb = ctx.shapes
        return _sum_to(g, sa), _sum_to(-g, sb)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return _sum_to(g * b, a.shape), _sum_to(g * a, b.shape)


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return _sum_to(g / b, a.shape), _sum_to(-g * a / (b * b), b.shape)


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return g @ b.T, a.T @ g


class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return -a

    @staticmethod
    def backward(ctx, g):
        return (-g,)


class Pow(Function):
    @staticmethod
    def forward(ctx, a, p):
        ctx.save_for_backward(a)
        ctx.p = p
        return a ** p

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved
        return g * ctx.p * a ** (ctx.p - 1), None


class ReLU(Function):
    @staticmethod
    def forward(ctx, a):
        out = a.clamp(min=0)
        ctx.save_for_backward(a > 0)
        return out

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved
        return (g * mask,)


class Exp(Function):
    @staticmethod
    def forward(ctx, a):
        out = torch.exp(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return (g * out,)


class Log(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.log(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved
        return (g / a,)


class Tanh(Function):
    @staticmethod
    def forward(ctx, a):
        out = torch.tanh(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return (g * (1 - out * out),)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, a):
        out = torch.sigmoid(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return (g * out * (1 - out),)


class Sum(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.shape = a.shape
        return a.sum()

    @staticmethod
    def backward(ctx, g):
        return (g.expand(ctx.shape).clone(),)


class Mean(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.shape = a.shape
        return a.mean()

    @staticmethod
    def backward(ctx, g):
        n = 1
        for s in ctx.shape:
            n *= s
        return ((g / n).expand(ctx.shape).clone(),)


class Transpose(Function):
    @staticmethod
    def forward(ctx, a):
        return a.T

    @staticmethod
    def backward(ctx, g):
        return (g.T,)


class Reshape(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a.shape
        return a.reshape(shape)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None


class Maximum(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.maximum(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        wa = (a > b).to(g.dtype) + 0.5 * (a == b).to(g.dtype)
        return _sum_to(g * wa, a.shape), _sum_to(g * (1 - wa), b.shape)


class MaxPool2d(Function):
    @staticmethod
    def forward(ctx, x, k):
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        win = x[:, :, : ho * k, : wo * k].reshape(n, c, ho, k, wo, k)
        win = win.permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho, wo, k * k)
        vals, idx = win.max(dim=-1)
        ctx.meta = (x.shape, k, idx)
        return vals

    @staticmethod
    def backward(ctx, g):
        (n, c, h, w), k, idx = ctx.meta
        ho, wo = g.shape[2], g.shape[3]
        gw = torch.zeros(n, c, ho, wo, k * k, dtype=g.dtype)
        gw.scatter_(-1, idx.unsqueeze(-1), g.unsqueeze(-1))
        gw = gw.reshape(n, c, ho, wo, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)
        gx = torch.zeros(n, c, h, w, dtype=g.dtype)
        gx[:, :, : ho * k, : wo * k] = gw
        return gx, None


class AvgPool2d(Function):
    @staticmethod
    def forward(ctx, x, k):
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        ctx.meta = (x.shape, k)
        return x[:, :, : ho * k, : wo * k].reshape(n, c, ho, k, wo, k).mean(dim=(3, 5))

    @staticmethod
    def backward(ctx, g):
        (n, c, h, w), k = ctx.meta
        ho, wo = g.shape[2], g.shape[3]
        spread = (g / (k * k))[:, :, :, None, :, None].expand(n, c, ho, k, wo, k)
        gx = torch.zeros(n, c, h, w, dtype=g.dtype)
        gx[:, :, : ho * k, : wo * k] = spread.reshape(n, c, ho * k, wo * k)
        return gx, None


class Conv2d(Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return F.conv2d(x, w)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved
        kh, kw = w.shape[2], w.shape[3]
        gx = F.conv_transpose2d(g, w)
        gw = F.conv2d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
        return gx, gw[:, :, :kh, :kw]


class Embedding(Function):
    @staticmethod
    def forward(ctx, table, ids):
        ctx.meta = (table.shape, ids)
        return table[ids]

    @staticmethod
    def backward(ctx, g):
        shape, ids = ctx.meta
        gt = torch.zeros(shape, dtype=g.dtype)
        gt.index_put_((ids,), g, accumulate=True)
        return gt, None


class BatchNorm(Function):
    @staticmethod
    def forward(ctx, x, eps):
        mu = x.mean(dim=0, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=0, keepdim=True)
        inv = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * inv
        ctx.save_for_backward(xhat, inv)
        return xhat

    @staticmethod
    def backward(ctx, g):
        xhat, inv = ctx.saved
        n = g.shape[0]
        gx = inv / n * (n * g - g.sum(0, keepdim=True) - xhat * (g * xhat).sum(0, keepdim=True))
        return gx, None


class CrossEntropy(Function):
    @staticmethod
    def forward(ctx, logits, target):
        m = logits.max(dim=1, keepdim=True).values
        shifted = logits - m
        lse = torch.log(torch.exp(shifted).sum(dim=1, keepdim=True))
        logp = shifted - lse
        n = logits.shape[0]
        ctx.save_for_backward(logp, target)
        return -logp[torch.arange(n), target].mean()

    @staticmethod
    def backward(ctx, g):
        logp, target = ctx.saved
        n = logp.shape[0]
        p = torch.exp(logp)
        p[torch.arange(n), target] -= 1
        return g * p / n, None


# ---------------------------------------------------------------- tensor


class Tensor:
    def __init__(self, data, requires_grad: bool = False):
        self.data = data if isinstance(data, torch.Tensor) else torch.as_tensor(data)
        self.requires_grad = requires_grad
        self.grad = None
        self._ctx = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    @property
    def shape(self):
        return self.data.shape

    # arithmetic
    def __add__(self, other):
        other = _as_operand(other, self.data)
        return NotImplemented if other is NotImplemented else Add.apply(self, other)

    def __radd__(self, other):
        other = _as_operand(other, self.data)
        return NotImplemented if other is NotImplemented else Add.apply(other, self)

    def __sub__(self, other):
        other = _as_operand(other, self.data)
        return NotImplemented if other is NotImplemented else Sub.apply(self, other)

    def __rsub__(self, other):
        other = _as_operand(other, self.data)
        return NotImplemented if other is NotImplemented else Sub.apply(other, self)

    def __mul__(self, other):
        other = _as_operand(other, self.data)
        return NotImplemented if other is NotImplemented else Mul.apply(self, other)

    def __rmul__(self, other):
        other = _as_operand(other, self.data)
        return NotImplemented if other is NotImplemented else Mul.apply(other, self)

    def __truediv__(self, other):
        other = _as_operand(other, self.data)
        return NotImplemented if other is NotImplemented else Div.apply(self, other)

    def __rtruediv__(self, other):
        other = _as_operand(other, self.data)
        return NotImplemented if other is NotImplemented else Div.apply(other, self)

    def __matmul__(self, other):
        return MatMul.apply(self, other)

    def __neg__(self):
        return Neg.apply(self)

    def __pow__(self, p):
        return Pow.apply(self, p)

    # elementwise / reductions
    def relu(self):
        return ReLU.apply(self)

    def exp(self):
        return Exp.apply(self)

    def log(self):
        return Log.apply(self)

    def tanh(self):
        return Tanh.apply(self)

    def sigmoid(self):
        return Sigmoid.apply(self)

    def sum(self):
        return Sum.apply(self)

    def mean(self):
        return Mean.apply(self)

    @property
    def T(self):
        return Transpose.apply(self)

    def reshape(self, shape):
        return Reshape.apply(self, tuple(shape))

    def maximum(self, other):
        other = _as_operand(other, self.data)
        return Maximum.apply(self, other)

    def max_pool2d(self, k):
        return MaxPool2d.apply(self, k)

    def avg_pool2d(self, k):
        return AvgPool2d.apply(self, k)

    def conv2d(self, weight):
        return Conv2d.apply(self, weight)

    def __getitem__(self, ids):
        return Embedding.apply(self, ids)

    def batch_norm(self, eps=1e-5):
        return BatchNorm.apply(self, eps)

    def cross_entropy(self, target):
        return CrossEntropy.apply(self, target)

    # backward
    def _graph_order(self):
        """Nodes reachable from self, each after every node that consumes it."""
        order, seen = [], {id(self)}
        stack = [(self, iter(self._ctx.inputs if self._ctx else ()))]
        while stack:
            node, it = stack[-1]
            for nxt in it:
                if isinstance(nxt, Tensor) and nxt.requires_grad and id(nxt) not in seen:
                    seen.add(id(nxt))
                    stack.append((nxt, iter(nxt._ctx.inputs if nxt._ctx else ())))
                    break
            else:
                stack.pop()
                order.append(node)
        order.reverse()
        return order

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        order = self._graph_order()
        grads = {id(self): grad}
        for node in order:
            g = grads.pop(id(node), None)
            if g is None:
                continue
            ctx = node._ctx
            if ctx is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            parts = ctx.fn.backward(ctx, g)
            for inp, need, part in zip(ctx.inputs, ctx.needs, parts):
                if not need or part is None:
                    continue
                k = id(inp)
                grads[k] = part if k not in grads else grads[k] + part
        for node in order:
            node._ctx = None
