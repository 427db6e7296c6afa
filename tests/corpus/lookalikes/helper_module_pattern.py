"""A correct core engine written as a small library in one file, with torch-like names of its own.

A ``Function`` base class with ``apply``, a context with ``saved_tensors``,
nodes with ``grad_fn`` and ``next_functions``: the vocabulary is torch's, the
classes are this file's, and torch's autograd is never involved.
"""

from __future__ import annotations

import torch


class Context:
    def __init__(self):
        self.saved_tensors: tuple[torch.Tensor, ...] = ()

    def save_for_backward(self, *tensors: torch.Tensor) -> None:
        self.saved_tensors = tensors


class Node:
    """One recorded op: what it does backward, and where its inputs came from."""

    def __init__(self, fn: type[Function], ctx: Context, inputs: tuple[Tensor, ...]):
        self.fn = fn
        self.ctx = ctx
        self.next_functions = tuple(t.grad_fn if t.grad_fn is not None else t for t in inputs)
        self.inputs = inputs


class Function:
    @staticmethod
    def forward(ctx: Context, *xs: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @staticmethod
    def backward(ctx: Context, g: torch.Tensor) -> tuple[torch.Tensor, ...]:
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs: Tensor) -> Tensor:
        ctx = Context()
        out = Tensor(cls.forward(ctx, *(t.data for t in inputs)), any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out.grad_fn = Node(cls, ctx, inputs)
        return out


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g @ b.mT, a.mT @ g


class Relu(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g * (a > 0).to(g.dtype),)


class Sum(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.sum()

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return (g.expand_as(a).clone(),)


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: torch.Tensor | None = None
        self.grad_fn: Node | None = None

    def __add__(self, other: Tensor) -> Tensor:
        return Add.apply(self, other)

    def __mul__(self, other: Tensor) -> Tensor:
        return Mul.apply(self, other)

    def __matmul__(self, other: Tensor) -> Tensor:
        return MatMul.apply(self, other)

    def relu(self) -> Tensor:
        return Relu.apply(self)

    def sum(self) -> Tensor:
        return Sum.apply(self)

    def backward(self) -> None:
        root = self.grad_fn
        if root is None:
            return
        order, seen, stack = [], {id(root)}, [(root, iter(root.next_functions))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if isinstance(child, Node) and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(child.next_functions)))
                    break
            else:
                stack.pop()
                order.append(node)
        grads = {id(root): torch.ones_like(self.data)}
        for node in reversed(order):
            g = grads.pop(id(node))
            for target, t, pg in zip(node.next_functions, node.inputs, node.fn.backward(node.ctx, g)):
                if not t.requires_grad:
                    continue
                if isinstance(target, Node):
                    grads[id(target)] = grads[id(target)] + pg if id(target) in grads else pg
                else:
                    t.grad = pg.clone() if t.grad is None else t.grad + pg
