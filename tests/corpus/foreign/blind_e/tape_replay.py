# Tape-based reverse mode.
#
# Every recorded op appends an entry to one global tape, in execution order.
# backward() replays the tape from the newest entry to the oldest, which is a
# valid reverse topological order for free. The tape only holds weak
# references: an entry lives as long as the tensor it produced, so a graph
# nobody holds any more simply disappears from the tape.

import weakref

import torch

TAPE = []
_recording = [True]
_live = [0]


class no_grad:
    def __enter__(self):
        _recording.append(False)

    def __exit__(self, *a):
        _recording.pop()


class Entry:
    __slots__ = ("out", "inputs", "vjp", "__weakref__")

    def __init__(self, out, inputs, vjp):
        self.out = weakref.ref(out)
        self.inputs = inputs
        self.vjp = vjp


def shrink(g, shape):
    while g.dim() > len(shape):
        g = g.sum(dim=0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] > 1:
            g = g.sum(dim=i, keepdim=True)
    return g


def compact():
    TAPE[:] = [w for w in TAPE if w() is not None]
    _live[0] = len(TAPE)


def record(data, inputs, vjp):
    out = Tensor(data)
    if _recording[-1] and any(t.requires_grad for t in inputs):
        out.requires_grad = True
        out.entry = Entry(out, inputs, vjp)
        TAPE.append(weakref.ref(out.entry))
        if len(TAPE) > 2 * _live[0] + 1024:
            compact()
    return out


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.entry = None

    def __add__(self, other):
        sa, sb = self.data.shape, other.data.shape
        return record(self.data + other.data, (self, other), lambda g: (shrink(g, sa), shrink(g, sb)))

    def __sub__(self, other):
        sa, sb = self.data.shape, other.data.shape
        return record(self.data - other.data, (self, other), lambda g: (shrink(g, sa), shrink(-g, sb)))

    def __neg__(self):
        return record(-self.data, (self,), lambda g: (-g,))

    def __mul__(self, other):
        a, b = self.data, other.data
        return record(a * b, (self, other), lambda g: (shrink(g * b, a.shape), shrink(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return record(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def __pow__(self, p):
        a = self.data
        return record(a ** p, (self,), lambda g: (g * p * a ** (p - 1),))

    def relu(self):
        a = self.data
        return record(a.relu(), (self,), lambda g: (g * (a > 0).to(g.dtype),))

    def exp(self):
        y = self.data.exp()
        return record(y, (self,), lambda g: (g * y,))

    def log(self):
        a = self.data
        return record(a.log(), (self,), lambda g: (g / a,))

    def sigmoid(self):
        y = torch.sigmoid(self.data)
        return record(y, (self,), lambda g: (g * y * (1 - y),))

    def sum(self):
        a = self.data
        return record(a.sum(), (self,), lambda g: (torch.ones_like(a) * g,))

    def mean(self):
        a = self.data
        return record(a.mean(), (self,), lambda g: (torch.ones_like(a) * g / a.numel(),))

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        shifted = z - z.max()
        logp = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
        rows = torch.arange(n)
        loss = -logp[rows, target].mean()

        def vjp(g):
            d = logp.exp()
            d[rows, target] -= 1
            return (d * (g / n),)

        return record(loss, (self,), vjp)

    def backward(self, grad=None):
        compact()
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        leaves = {}
        if self.entry is None:
            leaves[id(self)] = self
        used = []
        for w in reversed(TAPE):
            e = w()
            if e is None:
                continue
            g = grads.pop(id(e.out()), None)
            if g is None:
                continue
            used.append(e)
            for inp, gi in zip(e.inputs, e.vjp(g)):
                if not inp.requires_grad:
                    continue
                k = id(inp)
                grads[k] = grads[k] + gi if k in grads else gi
                if inp.entry is None:
                    leaves[k] = inp
        for k, leaf in leaves.items():
            g = grads.pop(k)
            leaf.grad = g.clone() if leaf.grad is None else leaf.grad + g
        for e in used:
            e.inputs, e.vjp = (), None
        del used
        compact()
