import contextlib
import functools

import torch

_state = {"grad": True}


@contextlib.contextmanager
def no_grad():
    prev = _state["grad"]
    _state["grad"] = False
    yield
    _state["grad"] = prev


def _sum_like(g, shape):
    while g.ndim > len(shape):
        g = g.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


def differentiable(fn):
    """Turn fn(*torch_args) -> (torch_out, vjp) into an op on Tensors.

    Tensor arguments are unwrapped, other arguments passed through; vjp(g)
    returns one gradient per Tensor argument, in order.
    """

    @functools.wraps(fn)
    def op(*args):
        tensors = [a for a in args if isinstance(a, Tensor)]
        raw = [a.data if isinstance(a, Tensor) else a for a in args]
        out_data, vjp = fn(*raw)
        out = Tensor(out_data)
        if _state["grad"] and any(t.requires_grad for t in tensors):
            out.requires_grad = True
            out._inputs = tensors
            out._vjp = vjp
        return out

    return op


def _num(x, like):
    return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=like.data.dtype))


@differentiable
def add(a, b):
    return a + b, lambda g: (_sum_like(g, a.shape), _sum_like(g, b.shape))


@differentiable
def mul(a, b):
    return a * b, lambda g: (_sum_like(g * b, a.shape), _sum_like(g * a, b.shape))


@differentiable
def matmul(a, b):
    return a @ b, lambda g: (g @ b.transpose(0, 1), a.transpose(0, 1) @ g)


@differentiable
def relu(a):
    m = a > 0
    return torch.relu(a), lambda g: (g * m,)


@differentiable
def total(a):
    return a.sum(), lambda g: (torch.full_like(a, 1.0) * g,)


@differentiable
def average(a):
    n = a.numel()
    return a.mean(), lambda g: (torch.full_like(a, 1.0) * g / n,)


@differentiable
def exp(a):
    y = torch.exp(a)
    return y, lambda g: (g * y,)


@differentiable
def log(a):
    return torch.log(a), lambda g: (g / a,)


@differentiable
def tanh(a):
    y = torch.tanh(a)
    return y, lambda g: (g * (1 - y * y),)


@differentiable
def sigmoid(a):
    y = torch.sigmoid(a)
    return y, lambda g: (g * y * (1 - y),)


@differentiable
def softmax_xent(logits, target):
    n = logits.shape[0]
    logp = torch.log_softmax(logits, dim=1)
    idx = torch.arange(n)
    loss = -logp[idx, target].mean()

    def vjp(g):
        d = logp.exp()
        d[idx, target] -= 1
        return (d * g / n,)

    return loss, vjp


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = []
        self._vjp = None

    def __add__(self, other):
        return add(self, _num(other, self))

    def __radd__(self, other):
        return add(_num(other, self), self)

    def __mul__(self, other):
        return mul(self, _num(other, self))

    def __rmul__(self, other):
        return mul(_num(other, self), self)

    def __matmul__(self, other):
        return matmul(self, other)

    def relu(self):
        return relu(self)

    def sum(self):
        return total(self)

    def mean(self):
        return average(self)

    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def tanh(self):
        return tanh(self)

    def sigmoid(self):
        return sigmoid(self)

    def cross_entropy(self, target):
        return softmax_xent(self, target)

    def backward(self, grad=None):
        WHITE, GREY, BLACK = 0, 1, 2
        color = {}
        order = []
        stack = [self]
        while stack:
            t = stack[-1]
            c = color.get(id(t), WHITE)
            if c == WHITE:
                color[id(t)] = GREY
                for p in t._inputs:
                    if p.requires_grad and color.get(id(p), WHITE) == WHITE:
                        stack.append(p)
            else:
                stack.pop()
                if c == GREY:
                    color[id(t)] = BLACK
                    order.append(t)

        acc = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(order):
            g = acc.pop(id(t), None)
            if g is None:
                continue
            if t._vjp is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, gp in zip(t._inputs, t._vjp(g)):
                if p.requires_grad:
                    acc[id(p)] = gp if id(p) not in acc else acc[id(p)] + gp
            t._inputs, t._vjp = [], None
