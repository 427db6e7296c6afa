import contextlib

import torch

_GRAD_ON = [True]


@contextlib.contextmanager
def no_grad():
    old = _GRAD_ON[0]
    _GRAD_ON[0] = False
    try:
        yield
    finally:
        _GRAD_ON[0] = old


def sum_to(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


def topo_sort(root):
    """Memoised recursive DFS, written with an explicit call stack.

    The recursive version would be

        def visit(t):
            if t in memo: return memo[t]
            memo[t] = IN_PROGRESS
            for p in t.parents: visit(p)
            memo[t] = len(order); order.append(t)

    Each frame below is [tensor, pc] where pc is the index of the next parent
    to "call"; returning from a call just resumes the frame underneath.
    """
    IN_PROGRESS = -1
    memo, order = {}, []
    frames = [[root, 0]]
    memo[root] = IN_PROGRESS
    while frames:
        frame = frames[-1]
        t, pc = frame
        if pc < len(t.parents):
            frame[1] = pc + 1
            p = t.parents[pc]
            if p.requires_grad and p not in memo:
                memo[p] = IN_PROGRESS
                frames.append([p, 0])  # "call" visit(p)
            continue
        memo[t] = len(order)  # "return"
        order.append(t)
        frames.pop()
    return order


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.parents = ()
        self.chain = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    @staticmethod
    def lift(x, like):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=like.data.dtype))

    @staticmethod
    def result(data, parents, chain):
        out = Tensor(data)
        if _GRAD_ON[0] and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out.parents = parents
            out.chain = chain
        return out

    # core --------------------------------------------------------------------
    def __add__(self, other):
        other = Tensor.lift(other, self)
        sa, sb = self.data.shape, other.data.shape
        return Tensor.result(self.data + other.data, (self, other), lambda g: (sum_to(g, sa), sum_to(g, sb)))

    def __mul__(self, other):
        other = Tensor.lift(other, self)
        a, b = self.data, other.data
        return Tensor.result(a * b, (self, other), lambda g: (sum_to(g * b, a.shape), sum_to(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor.result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        raise NotImplementedError("relu")

    def sum(self):
        n = self.data.shape
        return Tensor.result(self.data.sum(), (self,), lambda g: (g * torch.ones(n, dtype=g.dtype),))

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("tensor does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad must be given for non-scalar outputs")
            grad = torch.ones_like(self.data)
        order = topo_sort(self)
        gbuf = {self: grad.to(self.data.dtype)}
        for t in reversed(order):
            g = gbuf.pop(t)
            t.grad = g.clone() if t.grad is None else t.grad + g
            if t.chain is not None:
                for p, gp in zip(t.parents, t.chain(g)):
                    if p.requires_grad:
                        gbuf[p] = gbuf[p] + gp if p in gbuf else gp
        for t in order:
            t.parents, t.chain = (), None

    # numbers as operands --------------------------------------------------------
    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __rsub__(self, other):
        return self - other

    def __rtruediv__(self, other):
        return Tensor.lift(other, self) / self

    # extensions -------------------------------------------------------------------
    def __neg__(self):
        return Tensor.result(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        other = Tensor.lift(other, self)
        sa, sb = self.data.shape, other.data.shape
        return Tensor.result(self.data - other.data, (self, other), lambda g: (sum_to(g, sa), sum_to(-g, sb)))

    def __truediv__(self, other):
        other = Tensor.lift(other, self)
        a, b = self.data, other.data
        return Tensor.result(a / b, (self, other),
                             lambda g: (sum_to(g / b, a.shape), sum_to(-g * a / (b * b), b.shape)))

    def __pow__(self, p):
        x = self.data
        return Tensor.result(x ** p, (self,), lambda g: (g * p * x ** (p - 1),))

    def exp(self):
        y = self.data.exp()
        return Tensor.result(y, (self,), lambda g: (g * y,))

    def tanh(self):
        y = self.data.tanh()
        return Tensor.result(y, (self,), lambda g: (g * (1 - y * y),))

    def mean(self):
        n, shape = self.data.numel(), self.data.shape
        return Tensor.result(self.data.mean(), (self,), lambda g: (g * torch.ones(shape, dtype=g.dtype) / n,))

    @property
    def T(self):
        return Tensor.result(self.data.T, (self,), lambda g: (g.T,))
