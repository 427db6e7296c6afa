"""Autograd built from Function classes with a ctx object, in PyTorch's shape.

Each op is a subclass of ``Function`` with static ``forward(ctx, ...)`` and
``backward(ctx, grad)``; ``Function.apply`` wraps the result and links it to
its inputs. Core, backward(grad), and the extensions -a, a - b, exp, log, tanh,
sigmoid.
"""
import torch


class Context:
    def __init__(self):
        self.saved = ()

    def save_for_backward(self, *tensors):
        self.saved = tensors


class Function:
    @classmethod
    def apply(cls, *inputs):
        ctx = Context()
        data = cls.forward(ctx, *(t.data for t in inputs))
        out = Tensor(data, requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out._fn = cls
            out._ctx = ctx
            out._inputs = inputs
        return out


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError("this engine does not broadcast")


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        _check_same_shape(a, b)
        return a + b

    @staticmethod
    def backward(ctx, g):
        return g, g


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        _check_same_shape(a, b)
        return a - b

    @staticmethod
    def backward(ctx, g):
        return g, -g


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        _check_same_shape(a, b)
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return g * b, g * a


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved
        return g @ b.T, a.T @ g


class ReLU(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a > 0)
        return torch.relu(a)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved
        return (g * mask,)


class Sum(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.shape = a.shape
        return a.sum()

    @staticmethod
    def backward(ctx, g):
        return (g * torch.ones(ctx.shape, dtype=g.dtype),)


class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return -a

    @staticmethod
    def backward(ctx, g):
        return (-g,)


class Exp(Function):
    @staticmethod
    def forward(ctx, a):
        out = torch.exp(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return (g * out,)


class Log(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return torch.log(a)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved
        return (g / a,)


class Tanh(Function):
    @staticmethod
    def forward(ctx, a):
        out = torch.tanh(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return (g * (1 - out ** 2),)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, a):
        out = torch.exp(a) / (1 + torch.exp(a))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved
        return (g * out * (1 - out),)


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

    def __sub__(self, other):
        return Sub.apply(self, other)

    def __mul__(self, other):
        return Mul.apply(self, other)

    def __matmul__(self, other):
        return MatMul.apply(self, other)

    def __neg__(self):
        return Neg.apply(self)

    def relu(self):
        return ReLU.apply(self)

    def sum(self):
        return Sum.apply(self)

    def exp(self):
        return Exp.apply(self)

    def log(self):
        return Log.apply(self)

    def tanh(self):
        return Tanh.apply(self)

    def sigmoid(self):
        return Sigmoid.apply(self)

    def backward(self, grad=None):
        order, visited = [], set()
        stack = [(self, False)]
        while stack:
            node, children_done = stack.pop()
            if children_done:
                order.append(node)
            elif id(node) not in visited:
                visited.add(id(node))
                stack.append((node, True))
                stack.extend((x, False) for x in node._inputs if id(x) not in visited)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node._fn is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for x, gx in zip(node._inputs, node._fn.backward(node._ctx, g)):
                if x.requires_grad:
                    grads[id(x)] = grads[id(x)] + gx if id(x) in grads else gx
