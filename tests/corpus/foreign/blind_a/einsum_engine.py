import contextlib
import string

import torch

GRAD_ENABLED = True


@contextlib.contextmanager
def no_grad():
    global GRAD_ENABLED
    prev, GRAD_ENABLED = GRAD_ENABLED, False
    try:
        yield
    finally:
        GRAD_ENABLED = prev


def reduce_broadcast(g, shape):
    """einsum down to `shape`: letters for g's dims, keep only the dims that
    exist (with size > 1) in `shape`, sum all the others."""
    letters = string.ascii_letters[: g.dim()]
    lead = g.dim() - len(shape)
    kept = "".join(
        letters[lead + i] for i, n in enumerate(shape) if n != 1 or g.shape[lead + i] == 1
    )
    r = torch.einsum(f"{letters}->{kept}", g)
    return r.reshape(shape)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.parents = []
        self.backward_fn = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def _t(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def _node(self, data, parents, fn):
        out = Tensor(data)
        if GRAD_ENABLED and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out.parents = parents
            out.backward_fn = fn
        return out

    # ------------------------------------------------------------------ core
    def __add__(self, other):
        other = self._t(other)
        a_shape, b_shape = self.data.shape, other.data.shape
        return self._node(self.data + other.data, [self, other],
                          lambda g: [reduce_broadcast(g, a_shape), reduce_broadcast(g, b_shape)])

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = self._t(other)
        a, b = self.data, other.data

        def fn(g):
            ga, gb = g * b, g * a
            # broadcasting adds leading dims: sum them out again
            while ga.dim() > a.dim():
                ga = ga.sum(0)
            while gb.dim() > b.dim():
                gb = gb.sum(0)
            return [ga, gb]

        return self._node(a * b, [self, other], fn)

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._node(torch.einsum("ij,jk->ik", a, b), [self, other],
                          lambda g: [torch.einsum("ik,jk->ij", g, b), torch.einsum("ij,ik->jk", a, g)])

    def relu(self):
        x = self.data
        mask = (x > 0).to(x.dtype)
        return self._node(torch.einsum("...,...->...", x, mask), [self],
                          lambda g: [torch.einsum("...,...->...", g, mask)])

    def sum(self):
        x = self.data
        letters = string.ascii_lowercase[: x.dim()]
        return self._node(torch.einsum(f"{letters}->", x), [self],
                          lambda g: [g * torch.ones_like(x)])

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("called backward on a tensor that does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("non-scalar backward needs a grad argument")
            grad = torch.ones_like(self.data)

        # iterative DFS post-order
        topo, visited = [], set()
        stack = [(self, iter(self.parents))]
        visited.add(self)
        while stack:
            node, it = stack[-1]
            advanced = False
            for p in it:
                if p.requires_grad and p not in visited:
                    visited.add(p)
                    stack.append((p, iter(p.parents)))
                    advanced = True
                    break
            if not advanced:
                topo.append(node)
                stack.pop()

        buf = {self: grad.to(self.data.dtype)}
        for node in reversed(topo):
            g = buf.pop(node)
            node.grad = g.clone() if node.grad is None else node.grad + g
            if node.backward_fn is None:
                continue
            for p, pg in zip(node.parents, node.backward_fn(g)):
                if p.requires_grad:
                    buf[p] = buf[p] + pg if p in buf else pg
            node.parents, node.backward_fn = [], None

    # ------------------------------------------------------------------ extensions
    def __neg__(self):
        return self._node(-self.data, [self], lambda g: [-g])

    def __sub__(self, other):
        return self + (-self._t(other))

    def __rsub__(self, other):
        return self._t(other) + (-self)

    def __pow__(self, p):
        x = self.data
        return self._node(x ** p, [self], lambda g: [g * p * x ** (p - 1)])

    def exp(self):
        y = self.data.exp()
        return self._node(y, [self], lambda g: [g * y])

    def tanh(self):
        y = self.data.tanh()
        return self._node(y, [self], lambda g: [g * (1 - y * y)])

    def mean(self):
        x = self.data
        return self._node(x.mean(), [self], lambda g: [g * torch.ones_like(x) / x.numel()])

    @property
    def T(self):
        return self._node(torch.einsum("ij->ji", self.data), [self], lambda g: [torch.einsum("ij->ji", g)])

    def conv2d(self, weight):
        # im2col with unfold, then a single einsum
        x, w = self.data, weight.data
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        ho, wo = h - kh + 1, wd - kw + 1
        cols = torch.nn.functional.unfold(x, (kh, kw))            # (n, c*kh*kw, ho*wo)
        wmat = w.reshape(o, -1)                                    # (o, c*kh*kw)
        out = torch.einsum("ok,nkl->nol", wmat, cols).reshape(n, o, ho, wo)

        def fn(g):
            g2 = g.reshape(n, o, ho * wo)
            gw = torch.einsum("nol,nkl->ok", g2, cols).reshape(w.shape)
            gcols = torch.einsum("ok,nol->nkl", wmat, g2)
            gx = torch.nn.functional.fold(gcols, (h, wd), (kh, kw))
            return [gx, gw]

        return self._node(out, [self, weight], fn)

    def cross_entropy(self, target):
        """softmax + NLL, mean over the batch. (didn't get to it)"""
