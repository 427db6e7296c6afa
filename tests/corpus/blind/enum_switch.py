"""One Op enum and one big match statement: the forward records (op, inputs, saved), the
backward switches on the op. The order comes from Kahn's algorithm on consumer counts."""

import enum
from collections import Counter

import torch


class Op(enum.Enum):
    LEAF = enum.auto()
    ADD = enum.auto()
    MUL = enum.auto()
    MATMUL = enum.auto()
    RELU = enum.auto()
    SUM = enum.auto()
    NEG = enum.auto()
    EXP = enum.auto()


def unbroadcast(g, shape):
    while g.ndim > len(shape):
        g = g.sum(0)
    return g.sum([i for i, s in enumerate(shape) if s == 1], keepdim=True) if 1 in shape else g


class Tensor:
    def __init__(self, data, requires_grad=False, op=Op.LEAF, inputs=(), saved=None):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op, self.inputs, self.saved = op, inputs, saved

    @staticmethod
    def _new(data, op, inputs, saved=None):
        if any(t.requires_grad for t in inputs):
            return Tensor(data, True, op, inputs, saved)
        return Tensor(data)

    def _other(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._other(o)
        return self._new(self.data + o.data, Op.ADD, (self, o))

    def __mul__(self, o):
        o = self._other(o)
        return self._new(self.data * o.data, Op.MUL, (self, o))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, o):
        return self._new(self.data @ o.data, Op.MATMUL, (self, o))

    def relu(self):
        return self._new(self.data.relu(), Op.RELU, (self,))

    def sum(self):
        return self._new(self.data.sum(), Op.SUM, (self,))

    def __neg__(self):
        return self._new(-self.data, Op.NEG, (self,))

    def __sub__(self, o):
        return self + -self._other(o)

    def exp(self):
        e = self.data.exp()
        return self._new(e, Op.EXP, (self,), e)

    def _input_grads(self, g):
        a = self.inputs[0]
        match self.op:
            case Op.ADD:
                b = self.inputs[1]
                return [unbroadcast(g, a.data.shape), unbroadcast(g, b.data.shape)]
            case Op.MUL:
                b = self.inputs[1]
                return [unbroadcast(g * b.data, a.data.shape), unbroadcast(g * a.data, b.data.shape)]
            case Op.MATMUL:
                b = self.inputs[1]
                return [g @ b.data.T, a.data.T @ g]
            case Op.RELU:
                return [torch.where(a.data > 0, g, 0.0)]
            case Op.SUM:
                return [g]
            case Op.NEG:
                return [-g]
            case Op.EXP:
                return [g * self.saved]
        raise ValueError(self.op)

    def backward(self, grad=None):
        consumers = Counter()
        seen, frontier = {id(self)}, [self]
        while frontier:
            t = frontier.pop()
            for p in t.inputs:
                consumers[id(p)] += 1
                if id(p) not in seen:
                    seen.add(id(p))
                    frontier.append(p)
        acc = {id(self): torch.ones_like(self.data) if grad is None else grad}
        ready = [self]
        while ready:
            t = ready.pop()
            g = acc.pop(id(t))
            if t.op is Op.LEAF:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t.inputs, t._input_grads(g)):
                if p.requires_grad:
                    acc[id(p)] = acc[id(p)] + pg if id(p) in acc else pg
                consumers[id(p)] -= 1
                if consumers[id(p)] == 0 and p.requires_grad:
                    ready.append(p)
            t.inputs, t.saved = (), None
