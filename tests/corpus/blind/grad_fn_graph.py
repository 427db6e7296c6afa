"""Mirrors PyTorch's own naming: a non-leaf tensor has a `grad_fn` (AddBackward,
MulBackward, ...) whose `next_functions` point at the producers of its inputs; a leaf that
requires grad is reached through an `AccumulateGrad` node. The engine counts dependencies
on the grad_fn graph and runs each node once all of its gradient has arrived."""

from __future__ import annotations

import torch


def _reduce(grad, shape):
    while grad.dim() > len(shape):
        grad = grad.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and grad.shape[d] != 1:
            grad = grad.sum(d, keepdim=True)
    return grad


class Node:
    next_functions: tuple = ()

    def apply(self, grad):
        raise NotImplementedError


class AccumulateGrad(Node):
    def __init__(self, variable):
        self.variable = variable

    def apply(self, grad):
        v = self.variable
        v.grad = grad.clone() if v.grad is None else v.grad + grad
        return ()


class AddBackward(Node):
    def __init__(self, a_shape, b_shape):
        self.a_shape, self.b_shape = a_shape, b_shape

    def apply(self, grad):
        return _reduce(grad, self.a_shape), _reduce(grad, self.b_shape)


class MulBackward(Node):
    def __init__(self, a, b):
        self.a, self.b = a, b

    def apply(self, grad):
        return _reduce(grad * self.a, self.a.shape), _reduce(grad * self.a, self.b.shape)


class MmBackward(Node):
    def __init__(self, a, b):
        self.a, self.b = a, b

    def apply(self, grad):
        return grad @ self.b.T, self.a.T @ grad


class ReluBackward(Node):
    def __init__(self, result):
        self.result = result

    def apply(self, grad):
        return (grad * (self.result > 0),)


class SumBackward(Node):
    def __init__(self, shape):
        self.shape = shape

    def apply(self, grad):
        return (grad.expand(self.shape).contiguous(),)


class PowBackward(Node):
    def __init__(self, a, p):
        self.a, self.p = a, p

    def apply(self, grad):
        return (grad * self.p * self.a ** (self.p - 1),)


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn: Node | None = None
        self._accumulator: AccumulateGrad | None = None

    @property
    def is_leaf(self):
        return self.grad_fn is None

    def _edge(self):
        if not self.requires_grad:
            return None
        if self.grad_fn is not None:
            return self.grad_fn
        if self._accumulator is None:
            self._accumulator = AccumulateGrad(self)
        return self._accumulator

    def _make(self, data, fn, *inputs):
        out = Tensor(data, requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            fn.next_functions = tuple(t._edge() for t in inputs)
            out.grad_fn = fn
        return out

    def _lift(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        other = self._lift(other)
        return self._make(self.data + other.data, AddBackward(self.data.shape, other.data.shape), self, other)

    __radd__ = __add__

    def __mul__(self, other):
        other = self._lift(other)
        return self._make(self.data * other.data, MulBackward(self.data, other.data), self, other)

    __rmul__ = __mul__

    def __matmul__(self, other):
        return self._make(self.data @ other.data, MmBackward(self.data, other.data), self, other)

    def relu(self):
        out = self.data.relu()
        return self._make(out, ReluBackward(out), self)

    def sum(self):
        return self._make(self.data.sum(), SumBackward(self.data.shape), self)

    def __pow__(self, p):
        return self._make(self.data ** p, PowBackward(self.data, p), self)

    def backward(self, gradient=None):
        root = self._edge()
        if root is None:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        dependencies = {root: 0}
        stack = [root]
        while stack:
            fn = stack.pop()
            for nxt in fn.next_functions:
                if nxt is None:
                    continue
                if nxt not in dependencies:
                    dependencies[nxt] = 0
                    stack.append(nxt)
                dependencies[nxt] += 1
        buffers = {root: torch.ones_like(self.data) if gradient is None else gradient}
        ready = [root]
        while ready:
            fn = ready.pop()
            grads = fn.apply(buffers.pop(fn))
            for nxt, g in zip(fn.next_functions, grads):
                if nxt is None:
                    continue
                buffers[nxt] = buffers[nxt] + g if nxt in buffers else g
                dependencies[nxt] -= 1
                if dependencies[nxt] == 0:
                    ready.append(nxt)
            fn.next_functions = ()
        self.grad_fn = None
