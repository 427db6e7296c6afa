import contextlib

import torch
import torch.nn.functional as F

# Every non-leaf Tensor carries a plain dict describing how it was made:
#   {"op": name, "inputs": [tensors], "grad_fn": g -> [grad per input]}
# Leaves have node = None.

_GRAD_ENABLED = True


@contextlib.contextmanager
def no_grad():
    global _GRAD_ENABLED
    old = _GRAD_ENABLED
    _GRAD_ENABLED = False
    try:
        yield
    finally:
        _GRAD_ENABLED = old


def unbroadcast(g, shape):
    while g.ndim > len(shape):
        g = g.sum(dim=0)
    for i, size in enumerate(shape):
        if size == 1 and g.shape[i] != 1:
            g = g.sum(dim=i, keepdim=True)
    return g


def make(data, op, inputs, grad_fn):
    t = Tensor(data)
    if _GRAD_ENABLED and any(x.requires_grad for x in inputs):
        t.requires_grad = True
        t.node = {"op": op, "inputs": inputs, "grad_fn": grad_fn}
    return t


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.node = None

    def __repr__(self):
        op = self.node["op"] if self.node else "leaf"
        return f"Tensor({self.data}, {op})"

    def _lift(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    # ---- core
    def __add__(self, other):
        other = self._lift(other)
        sa, sb = self.data.shape, other.data.shape
        return make(self.data + other.data, "add", [self, other],
                    lambda g: [unbroadcast(g, sa), unbroadcast(g, sb)])

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return make(a * b, "mul", [self, other],
                    lambda g: [unbroadcast(g * b, a.shape), unbroadcast(g * a, b.shape)])

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        a, b = self.data, other.data
        return make(a @ b, "matmul", [self, other], lambda g: [g @ b.t(), a.t() @ g])

    def relu(self):
        x = self.data
        return make(F.relu(x), "relu", [self], lambda g: [torch.where(x > 0, g, torch.zeros_like(g))])

    def sum(self):
        x = self.data
        return make(x.sum(), "sum", [self], lambda g: [g.expand_as(x).clone()])

    # ---- backward
    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("no grad required")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("output is not a scalar; pass grad")
            grad = torch.ones_like(self.data)

        # topological sort (children after parents), iterative
        order, seen = [], set()
        stack = [self]
        while stack:
            t = stack[-1]
            if t in seen:
                stack.pop()
                continue
            ins = [x for x in (t.node["inputs"] if t.node else []) if x.requires_grad and x not in seen]
            if ins:
                stack.extend(ins)
            else:
                seen.add(t)
                order.append(stack.pop())

        grads = {self: grad.to(self.data.dtype)}
        for t in reversed(order):
            if t.node is None:
                continue
            g = grads[t]
            for x, gx in zip(t.node["inputs"], t.node["grad_fn"](g)):
                if x.requires_grad:
                    grads[x] = grads[x] + gx if x in grads else gx

        for t in order:
            t.grad = grads[t]
            t.node = None

    # ---- extensions
    def __neg__(self):
        return make(-self.data, "neg", [self], lambda g: [-g])

    def __sub__(self, other):
        other = self._lift(other)
        sa, sb = self.data.shape, other.data.shape
        return make(self.data - other.data, "sub", [self, other],
                    lambda g: [unbroadcast(g, sa), unbroadcast(-g, sb)])

    def __rsub__(self, other):
        return self._lift(other) - self

    def __truediv__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return make(a / b, "div", [self, other],
                    lambda g: [unbroadcast(g / b, a.shape), unbroadcast(-g * a / (b * b), b.shape)])

    def __rtruediv__(self, other):
        return self._lift(other) / self

    def __pow__(self, p):
        x = self.data
        return make(x ** p, "pow", [self], lambda g: [g * p * x ** (p - 1)])

    def exp(self):
        y = self.data.exp()
        return make(y, "exp", [self], lambda g: [g * y])

    def log(self):
        x = self.data
        return make(x.log(), "log", [self], lambda g: [g / x])

    def tanh(self):
        y = self.data.tanh()
        return make(y, "tanh", [self], lambda g: [g * (1 - y ** 2)])

    def sigmoid(self):
        y = self.data.sigmoid()
        return make(y, "sigmoid", [self], lambda g: [g * y * (1 - y)])

    def mean(self):
        x = self.data
        return make(x.mean(), "mean", [self], lambda g: [g.expand_as(x) / x.numel()])

    @property
    def T(self):
        return make(self.data.t(), "T", [self], lambda g: [g.t()])

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        old = self.data.shape
        return make(self.data.reshape(shape), "reshape", [self], lambda g: [g.reshape(old)])

    def maximum(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        wa = (a > b).to(a.dtype) + (a == b).to(a.dtype) / 2
        return make(torch.maximum(a, b), "maximum", [self, other],
                    lambda g: [unbroadcast(g * wa, a.shape), unbroadcast(g * (1 - wa), b.shape)])

    def max_pool2d(self, k):
        x = self.data
        y, idx = F.max_pool2d(x, k, return_indices=True)

        def grad_fn(g):
            gx = torch.zeros_like(x).flatten(-2)
            gx.scatter_add_(-1, idx.flatten(-2), g.flatten(-2))
            return [gx.reshape(x.shape)]

        return make(y, "max_pool2d", [self], grad_fn)

    def avg_pool2d(self, k):
        x = self.data

        def grad_fn(g):
            gx = torch.zeros_like(x)
            h, w = g.shape[-2] * k, g.shape[-1] * k
            gx[..., :h, :w] = g.repeat_interleave(k, -2).repeat_interleave(k, -1) / k ** 2
            return [gx]

        return make(F.avg_pool2d(x, k), "avg_pool2d", [self], grad_fn)

    def conv2d(self, weight):
        x, w = self.data, weight.data

        def grad_fn(g):
            return [F.conv_transpose2d(g, w),
                    F.conv2d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)]

        return make(F.conv2d(x, w), "conv2d", [self, weight], grad_fn)

    def __getitem__(self, ids):
        W = self.data

        def grad_fn(g):
            gW = torch.zeros_like(W)
            gW.index_add_(0, ids.flatten(), g.reshape(ids.numel(), *W.shape[1:]))
            return [gW]

        return make(W[ids], "embedding", [self], grad_fn)

    def batch_norm(self, eps=1e-5):
        x = self.data
        n = x.shape[0]
        mu = x.mean(0)
        var = x.var(0, unbiased=False)
        istd = (var + eps).rsqrt()
        xh = (x - mu) * istd

        def grad_fn(g):
            return [istd * (g - g.mean(0) - xh * (g * xh).mean(0))]

        return make(xh, "batch_norm", [self], grad_fn)

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        logp = torch.log_softmax(z, dim=1)
        onehot = F.one_hot(target, z.shape[1]).to(z.dtype)
        return make(-(logp * onehot).sum() / n, "cross_entropy", [self],
                    lambda g: [g * (logp.exp() - onehot) / n])
