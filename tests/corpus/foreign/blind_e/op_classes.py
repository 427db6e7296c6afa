import torch

GRAD_ENABLED = True


class no_grad:
    def __enter__(self):
        global GRAD_ENABLED
        self.old = GRAD_ENABLED
        GRAD_ENABLED = False

    def __exit__(self, *args):
        global GRAD_ENABLED
        GRAD_ENABLED = self.old


def unbroadcast(grad, shape):
    while grad.dim() > len(shape):
        grad = grad.sum(dim=0)
    for i, size in enumerate(shape):
        if size == 1 and grad.shape[i] != 1:
            grad = grad.sum(dim=i, keepdim=True)
    return grad


# Each op: forward(*raw) -> (out, saved); backward(saved, grad) -> grads per input.

class Add:
    @staticmethod
    def forward(a, b):
        return a + b, (a.shape, b.shape)

    @staticmethod
    def backward(saved, grad):
        sa, sb = saved
        return unbroadcast(grad, sa), unbroadcast(grad, sb)


class Sub:
    @staticmethod
    def forward(a, b):
        return a - b, (a.shape, b.shape)

    @staticmethod
    def backward(saved, grad):
        sa, sb = saved
        return unbroadcast(grad, sa), unbroadcast(-grad, sb)


class Mul:
    @staticmethod
    def forward(a, b):
        return a * b, (a, b)

    @staticmethod
    def backward(saved, grad):
        a, b = saved
        grad_a = grad
        grad_a *= b
        grad_b = grad * a
        return unbroadcast(grad_a, a.shape), unbroadcast(grad_b, b.shape)


class Div:
    @staticmethod
    def forward(a, b):
        return a / b, (a, b)

    @staticmethod
    def backward(saved, grad):
        a, b = saved
        return unbroadcast(grad / b, a.shape), unbroadcast(-grad * a / b ** 2, b.shape)


class MatMul:
    @staticmethod
    def forward(a, b):
        return a @ b, (a, b)

    @staticmethod
    def backward(saved, grad):
        a, b = saved
        return grad @ b.T, a.T @ grad


class ReLU:
    @staticmethod
    def forward(a):
        mask = a > 0
        return a * mask, mask

    @staticmethod
    def backward(mask, grad):
        return (grad * mask,)


class Sum:
    @staticmethod
    def forward(a):
        return a.sum(), a.shape

    @staticmethod
    def backward(shape, grad):
        return (torch.ones(shape, dtype=grad.dtype) * grad,)


class Pow:
    def __init__(self, p):
        self.p = p

    def forward(self, a):
        return a ** self.p, a

    def backward(self, a, grad):
        return (grad * self.p * a ** (self.p - 1),)


class Tanh:
    @staticmethod
    def forward(a):
        y = torch.tanh(a)
        return y, y

    @staticmethod
    def backward(y, grad):
        return (grad * (1 - y ** 2),)


class Sigmoid:
    @staticmethod
    def forward(a):
        y = torch.sigmoid(a)
        return y, y

    @staticmethod
    def backward(y, grad):
        return (grad * y * (1 - y),)


class Node:
    __slots__ = ("op", "saved", "inputs", "__weakref__")

    def __init__(self, op, saved, inputs):
        self.op = op
        self.saved = saved
        self.inputs = inputs


def apply(op, *inputs):
    raw = [t.data for t in inputs]
    out_data, saved = op.forward(*raw)
    track = GRAD_ENABLED and any(t.requires_grad for t in inputs)
    out = Tensor(out_data, requires_grad=track)
    if track:
        out.node = Node(op, saved, inputs)
        out.depth = 1 + max(t.depth for t in inputs)
    return out


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.node = None
        self.depth = 0

    def _other(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        return apply(Add, self, self._other(other))

    def __radd__(self, other):
        return apply(Add, self._other(other), self)

    def __sub__(self, other):
        return apply(Sub, self, self._other(other))

    def __rsub__(self, other):
        return apply(Sub, self._other(other), self)

    def __mul__(self, other):
        return apply(Mul, self, self._other(other))

    def __rmul__(self, other):
        return apply(Mul, self._other(other), self)

    def __truediv__(self, other):
        return apply(Div, self, self._other(other))

    def __rtruediv__(self, other):
        return apply(Div, self._other(other), self)

    def __matmul__(self, other):
        return apply(MatMul, self, other)

    def __pow__(self, p):
        return apply(Pow(p), self)

    def relu(self):
        return apply(ReLU, self)

    def sum(self):
        return apply(Sum, self)

    def tanh(self):
        return apply(Tanh, self)

    def sigmoid(self):
        return apply(Sigmoid, self)

    def backward(self, grad=None):
        # bucket every node by depth; a node is deeper than all of its inputs
        buckets = {}
        seen = {id(self)}
        todo = [self]
        while todo:
            t = todo.pop()
            buckets.setdefault(t.depth, []).append(t)
            if t.node is not None:
                for i in t.node.inputs:
                    if i.requires_grad and id(i) not in seen:
                        seen.add(id(i))
                        todo.append(i)

        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for depth in sorted(buckets, reverse=True):
            for t in buckets[depth]:
                g = grads.pop(id(t), None)
                if g is None:
                    continue
                if t.node is None:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                    continue
                parts = t.node.op.backward(t.node.saved, g)
                for inp, part in zip(t.node.inputs, parts):
                    if inp.requires_grad:
                        k = id(inp)
                        grads[k] = part if k not in grads else grads[k] + part
                t.node = None
