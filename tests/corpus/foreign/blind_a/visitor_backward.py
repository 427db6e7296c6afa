"""Autograd with the visitor pattern.

The graph is made of small record objects (one class per kind of op) that only
hold their inputs and what they saved.  All the calculus lives in one place,
``GradVisitor``: ``record.accept(visitor, g)`` double-dispatches to the
matching ``visit_*`` method, which returns one gradient per input.
"""
import contextlib

import torch


class _Mode:
    record = True


@contextlib.contextmanager
def no_grad():
    prev = _Mode.record
    _Mode.record = False
    try:
        yield
    finally:
        _Mode.record = prev


def _sum_to(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


# ---- graph records -----------------------------------------------------------
class Record:
    def __init__(self, inputs, **saved):
        self.inputs = inputs
        self.__dict__.update(saved)


class AddRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_add(self, g)


class MulRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_mul(self, g)


class MatMulRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_matmul(self, g)


class ReluRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_relu(self, g)


class SumRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_sum(self, g)


class MeanRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_mean(self, g)


class SubRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_sub(self, g)


class DivRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_div(self, g)


class PowRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_pow(self, g)


class TanhRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_tanh(self, g)


class SigmoidRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_sigmoid(self, g)


class TransposeRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_transpose(self, g)


class ReshapeRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_reshape(self, g)


class CrossEntropyRec(Record):
    def accept(self, visitor, g):
        return visitor.visit_cross_entropy(self, g)


class GradVisitor:
    def visit_add(self, r, g):
        a, b = r.inputs
        return _sum_to(g, a.data.shape), _sum_to(g, b.data.shape)

    def visit_mul(self, r, g):
        return _sum_to(g * r.b, r.a.shape), _sum_to(g * r.a, r.b.shape)

    def visit_matmul(self, r, g):
        return g @ r.b.T, r.a.T @ g

    def visit_relu(self, r, g):
        return (g * (r.x > 0),)

    def visit_sum(self, r, g):
        return (torch.ones_like(r.x),)

    def visit_mean(self, r, g):
        return (g * torch.ones_like(r.x) / r.x.numel(),)

    def visit_sub(self, r, g):
        a, b = r.inputs
        return _sum_to(g, a.data.shape), _sum_to(-g, b.data.shape)

    def visit_div(self, r, g):
        return _sum_to(g / r.b, r.a.shape), _sum_to(-g * r.a / r.b ** 2, r.b.shape)

    def visit_pow(self, r, g):
        return (g * r.p * r.x ** (r.p - 1),)

    def visit_tanh(self, r, g):
        return (g * (1 - r.y ** 2),)

    def visit_sigmoid(self, r, g):
        return (g * r.y * (1 - r.y),)

    def visit_transpose(self, r, g):
        return (g.T,)

    def visit_reshape(self, r, g):
        return (g.reshape(r.shape),)

    def visit_cross_entropy(self, r, g):
        p = r.logp.exp()
        p[torch.arange(r.n), r.target] -= 1
        return (g * p / r.n,)


_VISITOR = GradVisitor()


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.record = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def _other(self, o):
        return o if isinstance(o, Tensor) else Tensor(torch.tensor(o, dtype=self.data.dtype))

    @staticmethod
    def _make(data, rec_cls, inputs, **saved):
        out = Tensor(data)
        if _Mode.record and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out.record = rec_cls(inputs, **saved)
        return out

    # core
    def __add__(self, o):
        o = self._other(o)
        return Tensor._make(self.data + o.data, AddRec, (self, o))

    def __radd__(self, o):
        return self + o

    def __mul__(self, o):
        o = self._other(o)
        return Tensor._make(self.data * o.data, MulRec, (self, o), a=self.data, b=o.data)

    def __rmul__(self, o):
        return self * o

    def __matmul__(self, o):
        return Tensor._make(self.data @ o.data, MatMulRec, (self, o), a=self.data, b=o.data)

    def relu(self):
        return Tensor._make(torch.relu(self.data), ReluRec, (self,), x=self.data)

    def sum(self):
        return Tensor._make(self.data.sum(), SumRec, (self,), x=self.data)

    # extensions
    def mean(self):
        return Tensor._make(self.data.mean(), MeanRec, (self,), x=self.data)

    def __neg__(self):
        return self * -1

    def __sub__(self, o):
        o = self._other(o)
        return Tensor._make(self.data - o.data, SubRec, (self, o))

    def __rsub__(self, o):
        return self._other(o) - self

    def __truediv__(self, o):
        o = self._other(o)
        return Tensor._make(self.data / o.data, DivRec, (self, o), a=self.data, b=o.data)

    def __rtruediv__(self, o):
        return self._other(o) / self

    def __pow__(self, p):
        return Tensor._make(self.data ** p, PowRec, (self,), x=self.data, p=p)

    def tanh(self):
        y = torch.tanh(self.data)
        return Tensor._make(y, TanhRec, (self,), y=y)

    def sigmoid(self):
        y = torch.sigmoid(self.data)
        return Tensor._make(y, SigmoidRec, (self,), y=y)

    @property
    def T(self):
        return Tensor._make(self.data.T, TransposeRec, (self,))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return Tensor._make(self.data.reshape(shape), ReshapeRec, (self,), shape=self.data.shape)

    def conv2d(self, weight):
        raise NotImplementedError("conv2d: not done yet")

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        logp = torch.log_softmax(z, dim=1)
        loss = -logp[torch.arange(n), target].mean()
        return Tensor._make(loss, CrossEntropyRec, (self,), logp=logp, n=n, target=target)

    # backward
    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad required for non-scalar outputs")
            grad = torch.ones_like(self.data)

        order, marked, todo = [], set(), [self]
        while todo:
            t = todo[-1]
            if t in marked:
                todo.pop()
                order.append(t)
                continue
            marked.add(t)
            if t.record is not None:
                todo.extend(u for u in t.record.inputs if u.requires_grad and u not in marked)
            # a tensor pushed twice is finished by whichever copy is popped first
        seen, topo = set(), []
        for t in order:
            if t not in seen:
                seen.add(t)
                topo.append(t)

        pending = {self: grad.to(self.data.dtype)}
        for t in reversed(topo):
            g = pending.pop(t)
            t.grad = g.clone() if t.grad is None else t.grad + g
            if t.record is None:
                continue
            for u, gu in zip(t.record.inputs, t.record.accept(_VISITOR, g)):
                if u.requires_grad:
                    pending[u] = pending[u] + gu if u in pending else gu
        for t in topo:
            t.record = None
