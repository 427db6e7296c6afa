"""An op-class hierarchy: every graph node is an instance of an ``Op`` subclass.

``Op.forward`` computes on raw torch tensors and saves what ``Op.backward``
needs; ``backward`` returns one gradient per input.  The engine reduces each
gradient to its input's shape (broadcasting), walks the graph in reverse
topological order and frees it afterwards.
"""

import torch

GRAD_ENABLED = True


class no_grad:
    def __enter__(self):
        global GRAD_ENABLED
        self.prev = GRAD_ENABLED
        GRAD_ENABLED = False

    def __exit__(self, exc_type, exc, tb):
        global GRAD_ENABLED
        GRAD_ENABLED = self.prev


def unbroadcast(grad, shape):
    while grad.dim() > len(shape):
        grad = grad.sum(dim=0)
    for dim, size in enumerate(shape):
        if size == 1 and grad.shape[dim] > 1:
            grad = grad.sum(dim=dim, keepdim=True)
    return grad


class Op:
    def __init__(self):
        self.saved = ()

    def save(self, *tensors):
        self.saved = tensors

    def forward(self, *xs):
        raise NotImplementedError

    def backward(self, g):
        raise NotImplementedError


class Add(Op):
    def forward(self, a, b):
        return a + b

    def backward(self, g):
        return g, g


class Sub(Op):
    def forward(self, a, b):
        return a - b

    def backward(self, g):
        return g, -g


class Neg(Op):
    def forward(self, a):
        return -a

    def backward(self, g):
        return (-g,)


class Mul(Op):
    def forward(self, a, b):
        self.save(a, b)
        return a * b

    def backward(self, g):
        a, b = self.saved
        return g * b, g * a


class Div(Op):
    def forward(self, a, b):
        self.save(a, b)
        return a / b

    def backward(self, g):
        a, b = self.saved
        return g * b, -g * a / (b * b)


class MatMul(Op):
    def forward(self, a, b):
        self.save(a, b)
        return a @ b

    def backward(self, g):
        a, b = self.saved
        return g @ b.mT, a.mT @ g


class Relu(Op):
    def forward(self, a):
        mask = a > 0
        self.save(mask)
        return a * mask

    def backward(self, g):
        (mask,) = self.saved
        return (g * mask,)


class Sum(Op):
    def forward(self, a):
        self.shape = a.shape
        return a.sum()

    def backward(self, g):
        return (g.expand(self.shape).clone(),)


class Mean(Op):
    def forward(self, a):
        self.shape = a.shape
        self.n = a.numel()
        return a.mean()

    def backward(self, g):
        return ((g / self.n).expand(self.shape).clone(),)


class Exp(Op):
    def forward(self, a):
        out = a.exp()
        self.save(out)
        return out

    def backward(self, g):
        (out,) = self.saved
        return (g * out,)


class Log(Op):
    def forward(self, a):
        self.save(a)
        return a.log()

    def backward(self, g):
        (a,) = self.saved
        return (g / a,)


class CrossEntropy(Op):
    def __init__(self, target):
        super().__init__()
        self.target = target

    def forward(self, logits):
        n = logits.shape[0]
        shifted = logits - logits.max(dim=1, keepdim=True).values
        log_probs = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
        self.save(log_probs.exp())
        return -log_probs[torch.arange(n), self.target].mean()

    def backward(self, g):
        (probs,) = self.saved
        n = probs.shape[0]
        d = probs.clone()
        d[torch.arange(n), self.target] -= 1
        return (d * g / n,)


def apply(op, *inputs):
    data = op.forward(*[t.data for t in inputs])
    out = Tensor(data)
    if GRAD_ENABLED and any(t.requires_grad for t in inputs):
        out.requires_grad = True
        out._op = op
        out._inputs = inputs
    return out


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._op = None
        self._inputs = ()

    def __add__(self, other):
        return apply(Add(), self, other)

    def __sub__(self, other):
        return apply(Sub(), self, other)

    def __neg__(self):
        return apply(Neg(), self)

    def __mul__(self, other):
        return apply(Mul(), self, other)

    def __truediv__(self, other):
        return apply(Div(), self, other)

    def __matmul__(self, other):
        return apply(MatMul(), self, other)

    def relu(self):
        return apply(Relu(), self)

    def sum(self):
        return apply(Sum(), self)

    def mean(self):
        return apply(Mean(), self)

    def exp(self):
        return apply(Exp(), self)

    def log(self):
        return apply(Log(), self)

    def cross_entropy(self, target):
        return apply(CrossEntropy(target), self)

    def backward(self, grad=None):
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("backward() without a gradient needs a one-element output")
            grad = torch.ones_like(self.data)
        order, seen = [], {id(self)}
        stack = [(self, iter(self._inputs))]
        while stack:
            node, it = stack[-1]
            nxt = next((t for t in it if t.requires_grad and id(t) not in seen), None)
            if nxt is None:
                stack.pop()
                order.append(node)
            else:
                seen.add(id(nxt))
                stack.append((nxt, iter(nxt._inputs)))
        grads = {id(self): grad}
        for node in reversed(order):
            g = grads.pop(id(node))
            if node._op is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for inp, gi in zip(node._inputs, node._op.backward(g)):
                if inp.requires_grad:
                    gi = unbroadcast(gi, inp.data.shape)
                    grads[id(inp)] = grads[id(inp)] + gi if id(inp) in grads else gi
        for node in order:
            node._op = None
            node._inputs = ()
