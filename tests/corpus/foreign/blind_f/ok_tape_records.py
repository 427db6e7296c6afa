"""Reverse-mode autodiff, tape flavour.

Each differentiable result carries one record: which tensors it was computed
from and a vector-Jacobian product (vjp) that maps the gradient of the result
to gradients of those inputs.  ``backward`` lays the records reachable from the
output out on a tape (iterative DFS, inputs before outputs) and replays the tape
from the end.  Once a record has been replayed it is dropped, so the output does
not keep the graph alive afterwards.
"""
from __future__ import annotations

import contextlib
from typing import Callable, NamedTuple, Optional, Sequence

import torch

Vjp = Callable[[torch.Tensor], Sequence[Optional[torch.Tensor]]]


class Record(NamedTuple):
    inputs: tuple
    vjp: Vjp


_GRAD_ENABLED = [True]


@contextlib.contextmanager
def no_grad():
    previous = _GRAD_ENABLED[0]
    _GRAD_ENABLED[0] = False
    try:
        yield
    finally:
        _GRAD_ENABLED[0] = previous


def _reduce_to(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Sum a broadcast gradient back down to ``shape``."""
    if g.shape == shape:
        return g
    extra = g.dim() - len(shape)
    if extra > 0:
        g = g.sum(dim=tuple(range(extra)))
    squeezed = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if squeezed:
        g = g.sum(dim=squeezed, keepdim=True)
    return g.reshape(shape)


class Tensor:
    def __init__(self, data, requires_grad: bool = False):
        if not isinstance(data, torch.Tensor):
            data = torch.as_tensor(data, dtype=torch.get_default_dtype())
        self.data = data
        self.requires_grad = bool(requires_grad)
        self.grad: Optional[torch.Tensor] = None
        self._record: Optional[Record] = None

    # -- plumbing --------------------------------------------------------
    def _lift(self, other) -> "Tensor":
        if isinstance(other, Tensor):
            return other
        return Tensor(torch.as_tensor(other, dtype=self.data.dtype))

    @staticmethod
    def _emit(data: torch.Tensor, inputs: tuple, vjp: Vjp) -> "Tensor":
        needs = _GRAD_ENABLED[0] and any(t.requires_grad for t in inputs)
        out = Tensor(data, requires_grad=needs)
        if needs:
            out._record = Record(inputs, vjp)
        return out

    @property
    def shape(self):
        return self.data.shape

    def __repr__(self):
        return f"Tensor({self.data!r}, requires_grad={self.requires_grad})"

    # -- core --------------------------------------------------------------
    def __add__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return self._emit(a + b, (self, other),
                          lambda g: (_reduce_to(g, a.shape), _reduce_to(g, b.shape)))

    __radd__ = __add__

    def __mul__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return self._emit(a * b, (self, other),
                          lambda g: (_reduce_to(g * b, a.shape), _reduce_to(g * a, b.shape)))

    __rmul__ = __mul__

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._emit(a @ b, (self, other), lambda g: (g @ b.t(), a.t() @ g))

    def relu(self):
        mask = self.data > 0
        return self._emit(self.data * mask, (self,), lambda g: (g * mask,))

    def sum(self):
        a = self.data
        return self._emit(a.sum(), (self,), lambda g: (g * torch.ones_like(a),))

    # -- extensions ------------------------------------------------------------
    def __neg__(self):
        return self._emit(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return self._emit(a - b, (self, other),
                          lambda g: (_reduce_to(g, a.shape), _reduce_to(-g, b.shape)))

    def __rsub__(self, other):
        return self._lift(other) - self

    def __truediv__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        return self._emit(a / b, (self, other),
                          lambda g: (_reduce_to(g / b, a.shape),
                                     _reduce_to(-g * a / (b * b), b.shape)))

    def __rtruediv__(self, other):
        return self._lift(other) / self

    def __pow__(self, p):
        a = self.data
        return self._emit(a ** p, (self,), lambda g: (g * p * a ** (p - 1),))

    def exp(self):
        y = torch.exp(self.data)
        return self._emit(y, (self,), lambda g: (g * y,))

    def log(self):
        a = self.data
        return self._emit(torch.log(a), (self,), lambda g: (g / a,))

    def tanh(self):
        y = torch.tanh(self.data)
        return self._emit(y, (self,), lambda g: (g * (1 - y * y),))

    def sigmoid(self):
        y = torch.sigmoid(self.data)
        return self._emit(y, (self,), lambda g: (g * y * (1 - y),))

    def mean(self):
        a = self.data
        n = a.numel()
        return self._emit(a.mean(), (self,), lambda g: (g * torch.ones_like(a) / n,))

    @property
    def T(self):
        return self._emit(self.data.t(), (self,), lambda g: (g.t(),))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        old = self.data.shape
        return self._emit(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def maximum(self, other):
        other = self._lift(other)
        a, b = self.data, other.data
        tie = (a == b).to(a.dtype) * 0.5

        def vjp(g):
            ga = g * ((a > b).to(a.dtype) + tie)
            gb = g * ((b > a).to(a.dtype) + tie)
            return _reduce_to(ga, a.shape), _reduce_to(gb, b.shape)

        return self._emit(torch.maximum(a, b), (self, other), vjp)

    def _windows(self, k):
        x = self.data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        crop = x[:, :, : ho * k, : wo * k]
        win = crop.reshape(n, c, ho, k, wo, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho, wo, k * k)
        return win, (n, c, h, w, ho, wo)

    @staticmethod
    def _unwindow(gwin, k, dims, like):
        n, c, h, w, ho, wo = dims
        g = gwin.reshape(n, c, ho, wo, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)
        full = torch.zeros_like(like)
        full[:, :, : ho * k, : wo * k] = g
        return full

    def max_pool2d(self, k):
        win, dims = self._windows(k)
        val, idx = win.max(dim=-1)
        x = self.data

        def vjp(g):
            gwin = torch.zeros_like(win).scatter_(-1, idx.unsqueeze(-1), g.unsqueeze(-1))
            return (self._unwindow(gwin, k, dims, x),)

        return self._emit(val, (self,), vjp)

    def avg_pool2d(self, k):
        win, dims = self._windows(k)
        x = self.data

        def vjp(g):
            gwin = (g / (k * k)).unsqueeze(-1).expand(win.shape)
            return (self._unwindow(gwin, k, dims, x),)

        return self._emit(win.mean(dim=-1), (self,), vjp)

    def conv2d(self, weight):
        x, w = self.data, weight.data
        o, c, kh, kw = w.shape
        cols = x.unfold(2, kh, 1).unfold(3, kw, 1)          # n c ho wo kh kw
        ho, wo = cols.shape[2], cols.shape[3]
        out = torch.einsum("nchwij,ocij->nohw", cols, w)

        def vjp(g):
            gw = torch.einsum("nohw,nchwij->ocij", g, cols)
            gcols = torch.einsum("nohw,ocij->nchwij", g, w)
            gx = torch.zeros_like(x)
            for i in range(kh):
                for j in range(kw):
                    gx[:, :, i:i + ho, j:j + wo] += gcols[..., i, j]
            return gx, gw

        return self._emit(out, (self, weight), vjp)

    def __getitem__(self, ids):
        W = self.data

        def vjp(g):
            gW = torch.zeros_like(W)
            if isinstance(ids, torch.Tensor):
                gW.index_put_((ids,), g, accumulate=True)
            else:
                gW[ids] += g
            return (gW,)

        return self._emit(W[ids], (self,), vjp)

    def batch_norm(self, eps: float = 1e-5):
        x = self.data
        n = x.shape[0]
        mu = x.mean(dim=0)
        var = ((x - mu) ** 2).mean(dim=0)
        inv = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * inv

        def vjp(g):
            return (inv / n * (n * g - g.sum(dim=0) - xhat * (g * xhat).sum(dim=0)),)

        return self._emit(xhat, (self,), vjp)

    def cross_entropy(self, target: torch.Tensor):
        z = self.data
        n = z.shape[0]
        shifted = z - z.max(dim=1, keepdim=True).values
        logp = shifted - torch.log(torch.exp(shifted).sum(dim=1, keepdim=True))
        rows = torch.arange(n)
        loss = -logp[rows, target].mean()

        def vjp(g):
            d = torch.exp(logp)
            d[rows, target] -= 1.0
            return (g * d / n,)

        return self._emit(loss, (self,), vjp)

    # -- backward ----------------------------------------------------------------
    def _tape(self) -> list:
        """Tensors with a record, each after every input it depends on."""
        tape, seen = [], {id(self)}
        stack = [(self, iter(self._record.inputs))]
        while stack:
            node, pending = stack[-1]
            for inp in pending:
                if inp._record is not None and id(inp) not in seen:
                    seen.add(id(inp))
                    stack.append((inp, iter(inp._record.inputs)))
                    break
            else:
                stack.pop()
                tape.append(node)
        return tape

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("backward() needs a gradient for a non-scalar output")
            grad = torch.ones_like(self.data)
        else:
            grad = torch.as_tensor(grad).to(self.data.dtype).reshape(self.data.shape)

        if self._record is None:  # a leaf
            self.grad = grad.clone() if self.grad is None else self.grad + grad
            return

        tape = self._tape()
        pending = {id(self): grad}
        for node in reversed(tape):
            g = pending.pop(id(node), None)
            rec = node._record
            node._record = None
            if g is None:
                continue
            for inp, gi in zip(rec.inputs, rec.vjp(g)):
                if gi is None or not inp.requires_grad:
                    continue
                if inp._record is None:
                    inp.grad = gi.clone() if inp.grad is None else inp.grad + gi
                else:
                    k = id(inp)
                    pending[k] = gi if k not in pending else pending[k] + gi
