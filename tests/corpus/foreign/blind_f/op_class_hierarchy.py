"""Autograd engine: one class per operation.

Every operation subclasses ``Op`` and implements ``forward`` (on raw torch
tensors) and ``backward`` (gradient of the output -> gradients of the inputs).
``Op.apply`` wires an instance into the graph: the result tensor keeps the Op
instance as its ``creator`` and the Op keeps its input tensors.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Optional, Sequence

import torch


def reduce_to_shape(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    if grad.shape == shape:
        return grad
    n_extra = grad.dim() - len(shape)
    for _ in range(n_extra):
        grad = grad.sum(dim=0)
    for axis, size in enumerate(shape):
        if size == 1:
            grad = grad.sum(dim=axis, keepdim=True)
    return grad


class Op(ABC):
    inputs: Sequence["Tensor"]

    @classmethod
    def apply(cls, *inputs, **params) -> "Tensor":
        op = cls(**params)
        result = Tensor(op.forward(*(t.data for t in inputs)))
        if any(t.requires_grad for t in inputs):
            result.requires_grad = True
            result.creator = op
            op.inputs = inputs
        return result

    @abstractmethod
    def forward(self, *arrays: torch.Tensor) -> torch.Tensor:
        ...

    @abstractmethod
    def backward(self, grad: torch.Tensor) -> Sequence[Optional[torch.Tensor]]:
        ...


class BinaryOp(Op, ABC):
    """Elementwise op of two broadcastable operands."""

    def forward(self, a, b):
        self.a, self.b = a, b
        return self.compute(a, b)

    def backward(self, grad):
        ga, gb = self.partials(grad)
        return reduce_to_shape(ga, self.a.shape), reduce_to_shape(gb, self.b.shape)

    @abstractmethod
    def compute(self, a, b): ...

    @abstractmethod
    def partials(self, grad): ...


class Add(BinaryOp):
    def compute(self, a, b):
        return a + b

    def partials(self, grad):
        return grad, grad


class Sub(BinaryOp):
    def compute(self, a, b):
        return a - b

    def partials(self, grad):
        return grad, -grad


class Mul(BinaryOp):
    def compute(self, a, b):
        return a * b

    def partials(self, grad):
        return grad * self.b, grad * self.a


class Div(BinaryOp):
    def compute(self, a, b):
        return a / b

    def partials(self, grad):
        return grad / self.b, -grad * self.a / self.b ** 2


class MatMul(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a @ b

    def backward(self, grad):
        return grad @ self.b.T, self.a.T @ grad


class ReLU(Op):
    def forward(self, a):
        self.mask = a > 0
        return a * self.mask

    def backward(self, grad):
        return (grad * self.mask,)


class Sum(Op):
    def forward(self, a):
        self.shape = a.shape
        return a.sum()

    def backward(self, grad):
        return (grad.expand(self.shape).clone(),)


class Neg(Op):
    def forward(self, a):
        return -a

    def backward(self, grad):
        return (-grad,)


class Pow(Op):
    def __init__(self, exponent):
        self.exponent = exponent

    def forward(self, a):
        self.a = a
        return a ** self.exponent

    def backward(self, grad):
        p = self.exponent
        return (grad * p * self.a ** (p - 1),)


class Transpose(Op):
    def forward(self, a):
        self.in_shape = a.shape
        return a.transpose(0, 1)

    def backward(self, grad):
        return (grad.reshape(self.in_shape),)


class Reshape(Op):
    def __init__(self, shape):
        self.shape = shape

    def forward(self, a):
        self.in_shape = a.shape
        return a.reshape(self.shape)

    def backward(self, grad):
        return (grad.reshape(self.in_shape),)


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: Optional[torch.Tensor] = None
        self.creator: Optional[Op] = None

    def __repr__(self):
        kind = type(self.creator).__name__ if self.creator else "leaf"
        return f"<Tensor {kind} {tuple(self.data.shape)}>"

    def _coerce(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    # arithmetic
    def __add__(self, o): return Add.apply(self, self._coerce(o))
    def __radd__(self, o): return Add.apply(self._coerce(o), self)
    def __sub__(self, o): return Sub.apply(self, self._coerce(o))
    def __rsub__(self, o): return Sub.apply(self._coerce(o), self)
    def __mul__(self, o): return Mul.apply(self, self._coerce(o))
    def __rmul__(self, o): return Mul.apply(self._coerce(o), self)
    def __truediv__(self, o): return Div.apply(self, self._coerce(o))
    def __rtruediv__(self, o): return Div.apply(self._coerce(o), self)
    def __neg__(self): return Neg.apply(self)
    def __pow__(self, p): return Pow.apply(self, exponent=p)
    def __matmul__(self, o): return MatMul.apply(self, o)

    def relu(self): return ReLU.apply(self)
    def sum(self): return Sum.apply(self)

    @property
    def T(self): return Transpose.apply(self)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        return Reshape.apply(self, shape=shape)

    # backward
    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        if grad is None:
            grad = torch.ones_like(self.data)

        order: list[Tensor] = []
        seen: set[int] = set()
        stack: list[tuple[Tensor, int]] = [(self, 0)]
        seen.add(id(self))
        while stack:
            t, i = stack.pop()
            ins = t.creator.inputs if t.creator is not None else ()
            if i < len(ins):
                stack.append((t, i + 1))
                child = ins[i]
                if child.requires_grad and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                order.append(t)

        grads = {id(self): grad}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.creator is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for inp, gi in zip(t.creator.inputs, t.creator.backward(g)):
                if inp.requires_grad:
                    grads[id(inp)] = grads[id(inp)] + gi if id(inp) in grads else gi
