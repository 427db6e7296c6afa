"""A complete, correct engine in another style: one class per op and a Kahn-style backward.

Core, every follow-up and every extension. Each op is a small class with
``forward`` on raw torch tensors and ``backward`` from the output's gradient to
one gradient per input. Backward counts, for every tensor, how many uses still
owe it a gradient, and passes a gradient on only once that count reaches zero.
"""

from __future__ import annotations

import contextlib

import torch

_recording = [True]


@contextlib.contextmanager
def no_grad():
    _recording.append(False)
    try:
        yield
    finally:
        _recording.pop()


def _sum_to(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Undo broadcasting: add up the copies an operand of ``shape`` was stretched into."""
    if g.shape == shape:
        return g
    lead = g.dim() - len(shape)
    axes = list(range(lead)) + [lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1]
    return g.sum(dim=axes, keepdim=True).reshape(shape) if axes else g.reshape(shape)


def _upsample(g: torch.Tensor, k: int) -> torch.Tensor:
    return g.repeat_interleave(k, dim=2).repeat_interleave(k, dim=3)


class Op:
    def __init__(self, **params):
        self.params = params

    def forward(self, *xs):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError


class Add(Op):
    def forward(self, a, b):
        return a + b

    def backward(self, g):
        return g, g


class Mul(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, g):
        return g * self.b, g * self.a


class Div(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a / b

    def backward(self, g):
        return g / self.b, -g * self.a / (self.b * self.b)


class MatMul(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a @ b

    def backward(self, g):
        return g @ self.b.transpose(0, 1), self.a.transpose(0, 1) @ g


class Pow(Op):
    def forward(self, a):
        self.a = a
        return a ** self.params["p"]

    def backward(self, g):
        p = self.params["p"]
        return (g * p * self.a ** (p - 1),)


class Relu(Op):
    def forward(self, a):
        self.positive = a > 0
        return torch.where(self.positive, a, torch.zeros_like(a))

    def backward(self, g):
        return (torch.where(self.positive, g, torch.zeros_like(g)),)


class Exp(Op):
    def forward(self, a):
        self.out = torch.exp(a)
        return self.out

    def backward(self, g):
        return (g * self.out,)


class Log(Op):
    def forward(self, a):
        self.a = a
        return torch.log(a)

    def backward(self, g):
        return (g / self.a,)


class Tanh(Op):
    def forward(self, a):
        self.out = torch.tanh(a)
        return self.out

    def backward(self, g):
        return (g * (1 - self.out ** 2),)


class Sigmoid(Op):
    def forward(self, a):
        self.out = 1 / (1 + torch.exp(-a))
        return self.out

    def backward(self, g):
        return (g * self.out * (1 - self.out),)


class Sum(Op):
    def forward(self, a):
        self.shape = a.shape
        return a.sum()

    def backward(self, g):
        return (g.expand(self.shape).clone(),)


class Mean(Op):
    def forward(self, a):
        self.shape = a.shape
        return a.sum() / a.numel()

    def backward(self, g):
        return (torch.full(self.shape, 1.0 / max(1, torch.Size(self.shape).numel()), dtype=g.dtype) * g,)


class Transpose(Op):
    def forward(self, a):
        return a.transpose(0, 1)

    def backward(self, g):
        return (g.transpose(0, 1),)


class Reshape(Op):
    def forward(self, a):
        self.shape = a.shape
        return a.reshape(self.params["shape"])

    def backward(self, g):
        return (g.reshape(self.shape),)


class Maximum(Op):
    def forward(self, a, b):
        self.left_wins = (a > b).to(a.dtype) + 0.5 * (a == b).to(a.dtype)
        return torch.where(a >= b, a, b)

    def backward(self, g):
        return g * self.left_wins, g * (1 - self.left_wins)


class MaxPool2d(Op):
    def forward(self, a):
        k = self.params["k"]
        n, c, h, w = a.shape
        out = a.reshape(n, c, h // k, k, w // k, k).amax(dim=(3, 5))
        # Tied maxima split the window's gradient evenly (torch gives it all to the first).
        winner = (a == _upsample(out, k)).to(a.dtype)
        ties = winner.reshape(n, c, h // k, k, w // k, k).sum(dim=(3, 5))
        self.winner = winner / _upsample(ties, k)
        return out

    def backward(self, g):
        return (_upsample(g, self.params["k"]) * self.winner,)


class AvgPool2d(Op):
    def forward(self, a):
        k = self.params["k"]
        n, c, h, w = a.shape
        return a.reshape(n, c, h // k, k, w // k, k).mean(dim=(3, 5))

    def backward(self, g):
        k = self.params["k"]
        return (_upsample(g, k) / (k * k),)


class Conv2d(Op):
    """Cross-correlation, no padding, stride 1: one shifted window per kernel offset."""

    def forward(self, x, w):
        self.x, self.w = x, w
        kh, kw = w.shape[2], w.shape[3]
        self.ho, self.wo = x.shape[2] - kh + 1, x.shape[3] - kw + 1
        out = x.new_zeros(x.shape[0], w.shape[0], self.ho, self.wo)
        for i in range(kh):
            for j in range(kw):
                out += torch.einsum("nchw,oc->nohw", x[:, :, i:i + self.ho, j:j + self.wo], w[:, :, i, j])
        return out

    def backward(self, g):
        x, w = self.x, self.w
        dx, dw = torch.zeros_like(x), torch.zeros_like(w)
        for i in range(w.shape[2]):
            for j in range(w.shape[3]):
                window = x[:, :, i:i + self.ho, j:j + self.wo]
                dw[:, :, i, j] = torch.einsum("nohw,nchw->oc", g, window)
                dx[:, :, i:i + self.ho, j:j + self.wo] += torch.einsum("nohw,oc->nchw", g, w[:, :, i, j])
        return dx, dw


class Gather(Op):
    def forward(self, table, ids):
        self.shape, self.ids = table.shape, ids
        return table[ids]

    def backward(self, g):
        grad = torch.zeros(self.shape, dtype=g.dtype)
        # Repeated ids each add their row: put with accumulate, never plain assignment.
        grad.index_put_((self.ids,), g, accumulate=True)
        return (grad,)


class BatchNorm(Op):
    def forward(self, a):
        n = a.shape[0]
        mu = a.sum(dim=0) / n
        var = ((a - mu) ** 2).sum(dim=0) / n
        self.inv = 1 / torch.sqrt(var + self.params["eps"])
        self.xhat = (a - mu) * self.inv
        return self.xhat

    def backward(self, g):
        n = g.shape[0]
        return (self.inv / n * (n * g - g.sum(dim=0) - self.xhat * (g * self.xhat).sum(dim=0)),)


class CrossEntropy(Op):
    def forward(self, z, target):
        self.target = target
        lse = torch.logsumexp(z, dim=1)
        self.softmax = torch.exp(z - lse.unsqueeze(1))
        return (lse - z.gather(1, target.unsqueeze(1)).squeeze(1)).mean()

    def backward(self, g):
        n = self.softmax.shape[0]
        onehot = torch.zeros_like(self.softmax).scatter_(1, self.target.unsqueeze(1), 1.0)
        return ((self.softmax - onehot) * (g / n),)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = bool(requires_grad)
        self.grad = None
        self.is_leaf = True
        self._op = None
        self._inputs = ()

    @staticmethod
    def _apply(op, *inputs, raw=()):
        ins = [x if isinstance(x, Tensor) else None for x in inputs]
        dtype = next(x.data.dtype for x in ins if x is not None)
        ins = [x if x is not None else Tensor(torch.tensor(v, dtype=dtype)) for x, v in zip(ins, inputs)]
        out = Tensor(op.forward(*(x.data for x in ins), *raw))
        out.is_leaf = False
        if _recording[-1] and any(x.requires_grad for x in ins):
            out.requires_grad = True
            out._op, out._inputs = op, tuple(ins)
        return out

    # core
    def __add__(self, other):
        return Tensor._apply(Add(), self, other)

    def __radd__(self, other):
        return Tensor._apply(Add(), other, self)

    def __mul__(self, other):
        return Tensor._apply(Mul(), self, other)

    def __rmul__(self, other):
        return Tensor._apply(Mul(), other, self)

    def __matmul__(self, other):
        return Tensor._apply(MatMul(), self, other)

    def relu(self):
        return Tensor._apply(Relu(), self)

    def sum(self):
        return Tensor._apply(Sum(), self)

    # follow-ups
    def cross_entropy(self, target):
        return Tensor._apply(CrossEntropy(), self, raw=(target,))

    # extensions
    def __neg__(self):
        return Tensor._apply(Mul(), self, -1.0)

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __truediv__(self, other):
        return Tensor._apply(Div(), self, other)

    def __rtruediv__(self, other):
        return Tensor._apply(Div(), other, self)

    def __pow__(self, p):
        return Tensor._apply(Pow(p=p), self)

    def exp(self):
        return Tensor._apply(Exp(), self)

    def log(self):
        return Tensor._apply(Log(), self)

    def tanh(self):
        return Tensor._apply(Tanh(), self)

    def sigmoid(self):
        return Tensor._apply(Sigmoid(), self)

    def mean(self):
        return Tensor._apply(Mean(), self)

    @property
    def T(self):
        return Tensor._apply(Transpose(), self)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return Tensor._apply(Reshape(shape=shape), self)

    def maximum(self, other):
        return Tensor._apply(Maximum(), self, other)

    def max_pool2d(self, k):
        return Tensor._apply(MaxPool2d(k=k), self)

    def avg_pool2d(self, k):
        return Tensor._apply(AvgPool2d(k=k), self)

    def conv2d(self, weight):
        return Tensor._apply(Conv2d(), self, weight)

    def __getitem__(self, ids):
        return Tensor._apply(Gather(), self, raw=(ids,))

    def batch_norm(self, eps=1e-5):
        return Tensor._apply(BatchNorm(eps=eps), self)

    # backward
    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        # How many uses of each tensor still owe it a gradient.
        owed = {}
        seen = {id(self)}
        todo = [self]
        while todo:
            t = todo.pop()
            for x in t._inputs:
                if x.requires_grad:
                    owed[id(x)] = owed.get(id(x), 0) + 1
                    if id(x) not in seen:
                        seen.add(id(x))
                        todo.append(x)
        partial = {id(self): grad}
        ready = [self]
        while ready:
            t = ready.pop()
            g = partial.pop(id(t), None)
            if t.is_leaf:
                if g is not None and t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            inputs, op = t._inputs, t._op
            # Release the node before its inputs run: nothing downstream needs it again.
            t._op, t._inputs = None, ()
            grads = op.backward(g) if g is not None and op is not None else [None] * len(inputs)
            for x, gx in zip(inputs, grads):
                if not x.requires_grad:
                    continue
                if gx is not None:
                    gx = _sum_to(gx, x.data.shape)
                    partial[id(x)] = partial[id(x)] + gx if id(x) in partial else gx
                owed[id(x)] -= 1
                if owed[id(x)] == 0:
                    ready.append(x)
