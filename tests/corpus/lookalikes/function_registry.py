"""A correct core engine built from a registry of ``Function`` classes, minitorch style.

Each operation is a class with static ``forward(ctx, ...)`` and
``backward(ctx, grad)``, registered by name with a decorator; ``Tensor``'s
operators look their ``Function`` up in the registry and ``apply`` it. Backward
closes over nothing but the context: ``ctx.saved_tensors`` holds what the rule needs.
"""

import functools

import torch

FUNCTIONS = {}


def register(name):
    def add(cls):
        FUNCTIONS[name] = cls
        return cls
    return add


class Context:
    def __init__(self):
        self.saved_tensors = ()

    def save_for_backward(self, *values):
        self.saved_tensors = values


class Function:
    @classmethod
    def apply(cls, *inputs):
        ctx = Context()
        out = Tensor(cls.forward(ctx, *(t.data for t in inputs)))
        if any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out.grad_fn = (cls, ctx, inputs)
        return out


@register("add")
class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


@register("mul")
class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


@register("matmul")
class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.transpose(-1, -2), a.transpose(-1, -2) @ g


@register("relu")
class ReLU(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a > 0)
        return a.clamp_min(0)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        return (g * mask,)


@register("sum")
class Sum(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a.shape)
        return a.sum()

    @staticmethod
    def backward(ctx, g):
        (shape,) = ctx.saved_tensors
        return (g.expand(shape),)


def _operator(name):
    @functools.wraps(FUNCTIONS[name].forward)
    def method(*inputs):
        return FUNCTIONS[name].apply(*inputs)
    return method


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None

    __add__ = _operator("add")
    __mul__ = _operator("mul")
    __matmul__ = _operator("matmul")
    relu = _operator("relu")
    sum = _operator("sum")

    def backward(self):
        order, seen = [], set()
        stack = [(self, iter(self.grad_fn[2] if self.grad_fn else ()))]
        seen.add(id(self))
        while stack:
            t, parents = stack[-1]
            parent = next(parents, None)
            if parent is None:
                stack.pop()
                order.append(t)
            elif id(parent) not in seen:
                seen.add(id(parent))
                stack.append((parent, iter(parent.grad_fn[2] if parent.grad_fn else ())))
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.grad_fn is None:
                t.grad = g if t.grad is None else t.grad + g
                continue
            cls, ctx, inputs = t.grad_fn
            for inp, ig in zip(inputs, cls.backward(ctx, g)):
                if inp.requires_grad:
                    grads[id(inp)] = grads[id(inp)] + ig if id(inp) in grads else ig
            t.grad_fn = None
