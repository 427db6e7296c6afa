import contextlib

import torch
import torch.nn.functional as F


class _GradMode:
    enabled = True


@contextlib.contextmanager
def no_grad():
    old = _GradMode.enabled
    _GradMode.enabled = False
    try:
        yield
    finally:
        _GradMode.enabled = old


def _fit(g, shape):
    """Sum a (possibly broadcast) gradient down to `shape`."""
    while g.dim() > len(shape):
        g = g.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


# ----------------------------------------------------------------------------
# Ops register themselves by name when their class is defined.
# ----------------------------------------------------------------------------
class Op:
    table = {}

    def __init_subclass__(cls, key=None, **kwargs):
        super().__init_subclass__(**kwargs)
        if key is not None:
            Op.table[key] = cls

    def __init__(self, *args):
        self.args = args  # Tensors (and plain extra arguments)

    @classmethod
    def run(cls, *args):
        op = cls(*args)
        tensors = [a for a in args if isinstance(a, Tensor)]
        out = Tensor(op.forward(*[a.data if isinstance(a, Tensor) else a for a in args]))
        if _GradMode.enabled and all(t.requires_grad for t in tensors):
            out.requires_grad = True
            out.op = op
        return out

    def inputs(self):
        return [a for a in self.args if isinstance(a, Tensor)]

    def forward(self, *xs):
        raise NotImplementedError

    def backward(self, g):
        """One gradient per Tensor input, in order."""
        raise NotImplementedError


class Add(Op, key="add"):
    def forward(self, a, b):
        self.shapes = a.shape, b.shape
        return a + b

    def backward(self, g):
        return _fit(g, self.shapes[0]), _fit(g, self.shapes[1])


class Mul(Op, key="mul"):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, g):
        return _fit(g * self.b, self.a.shape), _fit(g * self.a, self.b.shape)


class MatMul(Op, key="matmul"):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a @ b

    def backward(self, g):
        return g @ self.b.T, self.a.T @ g


class Relu(Op, key="relu"):
    def forward(self, x):
        self.mask = x > 0
        return x * self.mask

    def backward(self, g):
        return (g * self.mask,)


class Sum(Op, key="sum"):
    def forward(self, x):
        self.shape = x.shape
        return x.sum()

    def backward(self, g):
        return (g.expand(self.shape).contiguous(),)


class Neg(Op, key="neg"):
    def forward(self, x):
        return -x

    def backward(self, g):
        return (-g,)


class Sub(Op, key="sub"):
    def forward(self, a, b):
        self.shapes = a.shape, b.shape
        return a - b

    def backward(self, g):
        return _fit(g, self.shapes[0]), _fit(-g, self.shapes[1])


class Div(Op, key="div"):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a / b

    def backward(self, g):
        return _fit(g / self.b, self.a.shape), _fit(-g * self.a / self.b ** 2, self.b.shape)


class Pow(Op, key="pow"):
    def forward(self, x, p):
        self.x, self.p = x, p
        return x ** p

    def backward(self, g):
        return (g * self.p * self.x ** (self.p - 1),)


class Exp(Op, key="exp"):
    def forward(self, x):
        self.y = x.exp()
        return self.y

    def backward(self, g):
        return (g * self.y,)


class Tanh(Op, key="tanh"):
    def forward(self, x):
        self.y = x.tanh()
        return self.y

    def backward(self, g):
        return (g * (1 - self.y ** 2),)


class Mean(Op, key="mean"):
    def forward(self, x):
        self.shape, self.n = x.shape, x.numel()
        return x.mean()

    def backward(self, g):
        return (g.expand(self.shape) / self.n,)


class Reshape(Op, key="reshape"):
    def forward(self, x, shape):
        self.old = x.shape
        return x.reshape(shape)

    def backward(self, g):
        return (g.reshape(self.old),)


class Conv2d(Op, key="conv2d"):
    def forward(self, x, w):
        self.x, self.w = x, w
        return F.conv2d(x, w)

    def backward(self, g):
        gx = F.conv_transpose2d(g, self.w)
        gw = F.conv2d(self.x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
        return gx, gw


class CrossEntropy(Op, key="cross_entropy"):
    def forward(self, z, target):
        self.n = z.shape[0]
        self.target = target
        self.logp = z - torch.logsumexp(z, dim=1, keepdim=True)
        return -self.logp[torch.arange(self.n), target].mean()

    def backward(self, g):
        d = self.logp.exp()
        d[torch.arange(self.n), self.target] -= 1
        return (g * d / self.n,)


def _apply(key, *args):
    return Op.table[key].run(*args)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def __add__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return _apply("add", self, other)

    def __mul__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return _apply("mul", self, other)

    def __matmul__(self, other):
        return _apply("matmul", self, other)

    def relu(self):
        return _apply("relu", self)

    def sum(self):
        return _apply("sum", self)

    def __neg__(self):
        return _apply("neg", self)

    def __sub__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return _apply("sub", self, other)

    def __truediv__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return _apply("div", self, other)

    def __pow__(self, p):
        return _apply("pow", self, p)

    def exp(self):
        return _apply("exp", self)

    def tanh(self):
        return _apply("tanh", self)

    def mean(self):
        return _apply("mean", self)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return _apply("reshape", self, tuple(shape))

    def conv2d(self, weight):
        return _apply("conv2d", self, weight)

    def max_pool2d(self, k):
        pass

    def avg_pool2d(self, k):
        pass

    def cross_entropy(self, target):
        return _apply("cross_entropy", self, target)

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("need grad for non-scalar backward")
            grad = torch.ones_like(self.data)

        # topological order, inputs first, no recursion
        order, seen = [], {id(self)}
        stack = [(self, iter(self.op.inputs() if self.op else ()))]
        while stack:
            t, it = stack[-1]
            nxt = next((u for u in it if u.requires_grad and id(u) not in seen), None)
            if nxt is None:
                order.append(t)
                stack.pop()
            else:
                seen.add(id(nxt))
                stack.append((nxt, iter(nxt.op.inputs() if nxt.op else ())))

        pending = {id(self): grad.to(self.data.dtype)}
        for t in reversed(order):
            g = pending.pop(id(t))
            t.grad = g.clone() if t.grad is None else t.grad + g
            if t.op is None:
                continue
            for inp, gi in zip(t.op.inputs(), t.op.backward(g)):
                if inp.requires_grad:
                    pending[id(inp)] = pending[id(inp)] + gi if id(inp) in pending else gi
        for t in order:
            t.op = None
