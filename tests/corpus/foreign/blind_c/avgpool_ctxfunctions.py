"""Ops written as Function classes with static forward/backward and a ctx object.

(Our own tiny Function protocol over plain torch tensors; torch's autograd is not
used anywhere.)
"""

import torch


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ: "
                         "this engine does not broadcast")


class Context:
    def __init__(self):
        self.saved = ()

    def save(self, *values):
        self.saved = values


class Function:
    @classmethod
    def apply(cls, *inputs, **params):
        ctx = Context()
        data = cls.forward(ctx, *[t.data for t in inputs], **params)
        out = Tensor(data)
        if any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._ctx = ctx
            out._fn = cls
            out._inputs = inputs
        return out


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        _check_same_shape(a, b)
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        _check_same_shape(a, b)
        ctx.save(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return g * b, g * a


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return g @ b.transpose(0, 1), a.transpose(0, 1) @ g


class ReLU(Function):
    @staticmethod
    def forward(ctx, a):
        out = a.clamp(min=0)
        ctx.save(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return (g * (out > 0),)


class Sum(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save(a.shape)
        return a.sum()

    @staticmethod
    def backward(ctx, g):
        (shape,) = ctx.saved
        return (torch.full(shape, 1.0, dtype=g.dtype) * g,)


class Mean(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save(a.shape, a.numel())
        return a.mean()

    @staticmethod
    def backward(ctx, g):
        shape, n = ctx.saved
        return (torch.full(shape, 1.0, dtype=g.dtype) * g / n,)


class Reshape(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.save(a.shape)
        return a.reshape(shape)

    @staticmethod
    def backward(ctx, g):
        (shape,) = ctx.saved
        return (g.reshape(shape),)


def _windows(x, k):
    """(N, C, H, W) -> (N, C, H//k, W//k, k*k): the non-overlapping k x k windows."""
    n, c, h, w = x.shape
    ho, wo = h // k, w // k
    x = x[:, :, : ho * k, : wo * k].reshape(n, c, ho, k, wo, k)
    return x.permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho, wo, k * k)


class MaxPool2d(Function):
    @staticmethod
    def forward(ctx, x, k):
        vals, idx = _windows(x, k).max(dim=-1)
        ctx.save(x.shape, idx, k)
        return vals

    @staticmethod
    def backward(ctx, g):
        shape, idx, k = ctx.saved
        n, c, h, w = shape
        ho, wo = g.shape[2], g.shape[3]
        win = torch.zeros(n, c, ho, wo, k * k, dtype=g.dtype)
        win.scatter_(-1, idx.unsqueeze(-1), g.unsqueeze(-1))
        win = win.reshape(n, c, ho, wo, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)
        gx = torch.zeros(shape, dtype=g.dtype)
        gx[:, :, : ho * k, : wo * k] = win
        return (gx,)


class AvgPool2d(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save(x.shape, k)
        return _windows(x, k).mean(dim=-1)

    @staticmethod
    def backward(ctx, g):
        shape, k = ctx.saved
        ho, wo = g.shape[2], g.shape[3]
        spread = g.repeat(1, 1, k, k) / (k * k)
        gx = torch.zeros(shape, dtype=g.dtype)
        gx[:, :, : ho * k, : wo * k] = spread
        return (gx,)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._fn = None
        self._ctx = None
        self._inputs = ()

    def __add__(self, other):
        return Add.apply(self, other)

    def __mul__(self, other):
        return Mul.apply(self, other)

    def __matmul__(self, other):
        return MatMul.apply(self, other)

    def relu(self):
        return ReLU.apply(self)

    def sum(self):
        return Sum.apply(self)

    def mean(self):
        return Mean.apply(self)

    def reshape(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        return Reshape.apply(self, shape=shape)

    def max_pool2d(self, k):
        return MaxPool2d.apply(self, k=k)

    def avg_pool2d(self, k):
        return AvgPool2d.apply(self, k=k)

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        order, on_stack = [], {id(self)}
        stack = [(self, list(self._inputs))]
        while stack:
            node, todo = stack[-1]
            while todo and (not todo[-1].requires_grad or id(todo[-1]) in on_stack):
                todo.pop()
            if todo:
                child = todo.pop()
                on_stack.add(id(child))
                stack.append((child, list(child._inputs)))
            else:
                stack.pop()
                order.append(node)
        grads = {id(self): grad}
        for node in reversed(order):
            g = grads.pop(id(node))
            if node._fn is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for inp, gi in zip(node._inputs, node._fn.backward(node._ctx, g)):
                if inp.requires_grad:
                    grads[id(inp)] = grads[id(inp)] + gi if id(inp) in grads else gi
