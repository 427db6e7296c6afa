"""Pull-style reverse mode.

Edges are stored on the *producer* side: every tensor keeps a list of its
consumers (weak references, so a leaf like a weight matrix does not keep every
graph it was ever used in alive) together with which input slot it occupies.
In backward, a tensor's gradient is *pulled*: it is the sum, over its
consumers in this graph, of the gradient each consumer computed for that slot.
"""
import contextlib
import weakref

import torch

_GRAD_ENABLED = True


@contextlib.contextmanager
def no_grad():
    global _GRAD_ENABLED
    keep = _GRAD_ENABLED
    _GRAD_ENABLED = False
    try:
        yield
    finally:
        _GRAD_ENABLED = keep


def _fit(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._vjp = None
        self._consumers = []  # [(weakref to consumer, slot)]

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def _lift(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    @staticmethod
    def _link(data, inputs, vjp):
        out = Tensor(data)
        if _GRAD_ENABLED and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._inputs = inputs
            out._vjp = vjp
            ref = weakref.ref(out)
            for slot, t in enumerate(inputs):
                if t.requires_grad:
                    t._consumers.append((ref, slot))
        return out

    # ---- core ---------------------------------------------------------------------
    def __add__(self, other):
        other = self._lift(other)
        sa, sb = self.data.shape, other.data.shape
        return Tensor._link(self.data + other.data, (self, other), lambda g: (_fit(g, sa), _fit(g, sb)))

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return Tensor._link(a * b, (self, other), lambda g: (_fit(g * b, a.shape), _fit(g * a, b.shape)))

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._link(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return Tensor._link(torch.relu(x), (self,), lambda g: (g * (x > 0).to(g.dtype),))

    def sum(self):
        x = self.data
        return Tensor._link(x.sum(), (self,), lambda g: (torch.ones_like(x) * g,))

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("tensor does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("backward() on a non-scalar needs grad")
            grad = torch.ones_like(self.data)

        # every tensor of this graph, inputs before consumers
        order, members = [], set()
        stack = [(self, False)]
        while stack:
            t, ready = stack.pop()
            if ready:
                order.append(t)
                continue
            if t in members:
                continue
            members.add(t)
            stack.append((t, True))
            stack.extend((u, False) for u in t._inputs if u.requires_grad and u not in members)

        slot_grads = {}  # consumer -> the gradients it produced for its inputs
        for t in reversed(order):
            if t is self:
                g = grad.to(self.data.dtype)
            else:
                g = None
                for ref, slot in t._consumers:
                    c = ref()
                    if c is None or c not in slot_grads:
                        continue  # dead, or not part of this graph
                    part = slot_grads[c][slot]
                    g = part if g is None else g + part
            t.grad = g.clone() if t.grad is None else t.grad + g
            if t._vjp is not None:
                slot_grads[t] = t._vjp(g)

        for t in order:
            t._inputs, t._vjp = (), None
            t._consumers = [(r, s) for r, s in t._consumers if r() is not None and r() not in members]

    # ---- extensions -------------------------------------------------------------------
    def __neg__(self):
        return Tensor._link(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-self._lift(other))

    def __rsub__(self, other):
        return self._lift(other) + (-self)

    def tanh(self):
        y = torch.tanh(self.data)
        return Tensor._link(y, (self,), lambda g: (g * (1 - y * y),))

    def mean(self):
        x = self.data
        return Tensor._link(x.mean(), (self,), lambda g: (torch.ones_like(x) * g / x.numel(),))

    @property
    def T(self):
        return Tensor._link(self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        old = self.data.shape
        return Tensor._link(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def __getitem__(self, ids):
        """Embedding lookup: W[ids] picks rows of W."""
        W = self.data

        def vjp(g):
            gW = torch.zeros_like(W)
            gW[ids] = g
            return (gW,)

        return Tensor._link(W[ids], (self,), vjp)

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        rows = torch.arange(n)
        logp = z - torch.logsumexp(z, dim=1, keepdim=True)

        def vjp(g):
            d = logp.exp()
            d[rows, target] -= 1.0
            return (g * d / n,)

        return Tensor._link(-logp[rows, target].mean(), (self,), vjp)
