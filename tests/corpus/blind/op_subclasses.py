"""Every op result is an instance of a Tensor subclass (AddTensor, MulTensor, ...) that
overrides `_backward(grad)`; a plain Tensor is a leaf."""

import torch


def _reduce(g, shape):
    extra = g.dim() - len(shape)
    if extra > 0:
        g = g.sum(dim=tuple(range(extra)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] > 1)
    return g.sum(dim=dims, keepdim=True) if dims else g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.inputs = ()

    def _backward(self, grad):           # a leaf has nothing to pass on
        return ()

    @classmethod
    def _of(cls, data, *inputs):
        out = cls(data, requires_grad=any(t.requires_grad for t in inputs))
        out.inputs = inputs
        return out

    def _lift(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        other = self._lift(other)
        return AddTensor._of(self.data + other.data, self, other)

    def __mul__(self, other):
        other = self._lift(other)
        return MulTensor._of(self.data * other.data, self, other)

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, other):
        return MatMulTensor._of(self.data @ other.data, self, other)

    def relu(self):
        return ReluTensor._of(self.data.relu(), self)

    def sum(self):
        return SumTensor._of(self.data.sum(), self)

    def tanh(self):
        return TanhTensor._of(torch.tanh(self.data), self)

    def sigmoid(self):
        return SigmoidTensor._of(torch.sigmoid(self.data), self)

    def backward(self, grad=None):
        order, seen, stack = [], set(), [iter((self,))]
        pending = []
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                if pending:
                    order.append(pending.pop())
            elif id(nxt) not in seen:
                seen.add(id(nxt))
                pending.append(nxt)
                stack.append(iter(nxt.inputs))
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if not t.inputs:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for x, xg in zip(t.inputs, t._backward(g)):
                if x.requires_grad:
                    grads[id(x)] = grads[id(x)] + xg if id(x) in grads else xg
            t.inputs = ()


class AddTensor(Tensor):
    def _backward(self, grad):
        a, b = self.inputs
        return _reduce(grad, a.data.shape), _reduce(grad, b.data.shape)


class MulTensor(Tensor):
    def _backward(self, grad):
        a, b = self.inputs
        return _reduce(grad * b.data, a.data.shape), _reduce(grad * a.data, b.data.shape)


class MatMulTensor(Tensor):
    def _backward(self, grad):
        a, b = self.inputs
        return grad @ b.data.T, a.data.T @ grad


class ReluTensor(Tensor):
    def _backward(self, grad):
        return (grad * (self.data > 0),)


class SumTensor(Tensor):
    def _backward(self, grad):
        return (grad * torch.ones_like(self.inputs[0].data),)


class TanhTensor(Tensor):
    def _backward(self, grad):
        x = self.inputs[0].data
        return (grad * (1 - x ** 2),)


class SigmoidTensor(Tensor):
    def _backward(self, grad):
        return (grad * self.data * (1 - self.data),)
