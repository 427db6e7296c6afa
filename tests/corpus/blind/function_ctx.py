"""PyTorch-flavoured: every op is a `Function` subclass with static `forward(ctx, ...)`
and `backward(ctx, grad)`; `Function.apply` builds the graph node."""

import contextlib

import torch

_ENABLED = [True]


@contextlib.contextmanager
def no_grad():
    _ENABLED.append(False)
    try:
        yield
    finally:
        _ENABLED.pop()


class Context:
    def __init__(self):
        self.saved_tensors = ()

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


def _unbroadcast(grad, shape):
    ndim_extra = grad.dim() - len(shape)
    for _ in range(ndim_extra):
        grad = grad.sum(0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.size(axis) > 1:
            grad = grad.sum(axis, keepdim=True)
    return grad


class Function:
    @classmethod
    def apply(cls, *inputs, **kwargs):
        ctx = Context()
        data = cls.forward(ctx, *(t.data for t in inputs), **kwargs)
        requires = _ENABLED[-1] and any(t.requires_grad for t in inputs)
        out = Tensor(data, requires_grad=requires)
        if requires:
            out._ctx = (cls, ctx, inputs)
        return out


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (a.shape, b.shape)
        return a + b

    @staticmethod
    def backward(ctx, grad):
        sa, sb = ctx.shapes
        return _unbroadcast(grad, sa), _unbroadcast(grad, sb)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _unbroadcast(grad * b, a.shape), _unbroadcast(grad * a, b.shape)


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad @ b, a.T @ grad


class ReLU(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad * (a > 0).to(grad.dtype),)


class Sum(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.shape = a.shape
        return a.sum()

    @staticmethod
    def backward(ctx, grad):
        return (grad.expand(ctx.shape).clone(),)


class Exp(Function):
    @staticmethod
    def forward(ctx, a):
        out = a.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return (grad * out,)


class Log(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.log()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return (grad / a,)


class Mean(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.shape = a.shape
        return a.mean()

    @staticmethod
    def backward(ctx, grad):
        n = 1
        for s in ctx.shape:
            n *= s
        return (grad.expand(ctx.shape) / n,)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._ctx = None

    def _t(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other): return Add.apply(self, self._t(other))
    def __radd__(self, other): return Add.apply(self._t(other), self)
    def __mul__(self, other): return Mul.apply(self, self._t(other))
    def __rmul__(self, other): return Mul.apply(self._t(other), self)
    def __matmul__(self, other): return MatMul.apply(self, other)
    def relu(self): return ReLU.apply(self)
    def sum(self): return Sum.apply(self)
    def exp(self): return Exp.apply(self)
    def log(self): return Log.apply(self)
    def mean(self): return Mean.apply(self)
    def __neg__(self): return self * -1.0
    def __sub__(self, other): return self + (-self._t(other))
    def __rsub__(self, other): return self._t(other) + (-self)

    def backward(self, grad=None):
        topo, visited = [], set()
        stack = [(self, iter(self._ctx[2] if self._ctx else ()))]
        visited.add(id(self))
        while stack:
            node, children = stack[-1]
            for child in children:
                if id(child) not in visited:
                    visited.add(id(child))
                    stack.append((child, iter(child._ctx[2] if child._ctx else ())))
                    break
            else:
                stack.pop()
                topo.append(node)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(topo):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node._ctx is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            fn, ctx, inputs = node._ctx
            for inp, ig in zip(inputs, fn.backward(ctx, g)):
                if inp.requires_grad:
                    grads[id(inp)] = ig if id(inp) not in grads else grads[id(inp)] + ig
            node._ctx = None
