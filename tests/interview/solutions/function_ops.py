"""The task's other reading: every op a torch.autograd.Function with its own forward and backward.

A Tensor applies them to torch tensors that require grad and lets torch's engine run
backward; the formulas in each backward are the candidate's.
"""

import torch


class Add(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


class MatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.T, a.T @ g


class ReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        out = a.clamp(min=0)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * (out > 0)


class Sum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.shape = a.shape
        return a.sum()

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.shape)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._torch = data.detach().requires_grad_(requires_grad)
        self._leaves = [self] if requires_grad else []

    def _apply(self, function, *inputs):
        tracked = function.apply(*(t._torch for t in inputs))
        out = Tensor(tracked.detach(), tracked.requires_grad)
        out._torch = tracked
        out._leaves = list({id(leaf): leaf for t in inputs for leaf in t._leaves}.values())
        return out

    def __add__(self, other):
        return self._apply(Add, self, other)

    def __mul__(self, other):
        return self._apply(Mul, self, other)

    def __matmul__(self, other):
        return self._apply(MatMul, self, other)

    def relu(self):
        return self._apply(ReLU, self)

    def sum(self):
        return self._apply(Sum, self)

    def backward(self, grad=None):
        self._torch.backward(grad)
        for leaf in self._leaves:
            leaf.grad = leaf._torch.grad.clone()
