"""Each backward() replaces a leaf's gradient instead of adding to it.

Two forward passes and two backward() calls leave the gradient of one pass.
"""

import torch


class Context:
    def __init__(self):
        self.saved = ()

    def save_for_backward(self, *tensors):
        self.saved = tensors


class Function:
    """One op: forward on torch tensors, backward from the output's gradient to the inputs'."""

    @classmethod
    def apply(cls, *inputs):
        ctx = Context()
        out = Tensor(cls.forward(ctx, *(t.data for t in inputs)))
        if any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out.creator = (cls, ctx, inputs)
        return out


def unbroadcast(grad, shape):
    """Sum a gradient back to the shape of an operand that broadcasting stretched."""
    extra = grad.dim() - len(shape)
    if extra > 0:
        grad = grad.sum(dim=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:
        grad = grad.sum(dim=stretched, keepdim=True)
    return grad


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        return a + b

    @staticmethod
    def backward(ctx, grad):
        sa, sb = ctx.shapes
        return unbroadcast(grad, sa), unbroadcast(grad, sb)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        return unbroadcast(grad * b, a.shape), unbroadcast(grad * a, b.shape)


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        return grad @ b.T, a.T @ grad


class ReLU(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved
        return (grad * (a > 0).to(grad.dtype),)


class Sum(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.sum()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved
        return (grad.expand(a.shape),)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.creator = None  # (function, ctx, inputs) for results

    def __add__(self, other):
        return Add.apply(self, other)

    def __mul__(self, other):
        return Mul.apply(self, other)

    def __matmul__(self, other):
        return MatMul.apply(self, other)

    def relu(self):
        return ReLU.apply(self)

    def sum(self):
        return Sum.apply(self)

    def backward(self):
        order = []
        visited = set()
        stack = [(self, 0)]
        while stack:
            t, i = stack.pop()
            inputs = t.creator[2] if t.creator else ()
            if i < len(inputs):
                stack.append((t, i + 1))
                child = inputs[i]
                if id(child) not in visited:
                    visited.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(t)
        pending = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            grad = pending.pop(id(t), None)
            if grad is None or not t.requires_grad:
                continue
            if t.creator is None:
                t.grad = grad.clone()  # the bug: forgets the previous pass
                continue
            fn, ctx, inputs = t.creator
            for inp, g in zip(inputs, fn.backward(ctx, grad)):
                if inp.requires_grad:
                    pending[id(inp)] = pending[id(inp)] + g if id(inp) in pending else g
            t.creator = None  # its gradient is passed on: the inputs and saved tensors can go
