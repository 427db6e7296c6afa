"""Reverse-mode autodiff over torch tensors.

Design notes (for the interviewer):
  * Every op is a pair: a forward computed eagerly on ``.data`` and a module-level
    VJP function. The op binds what the VJP needs with ``functools.partial``, so
    a node only keeps alive the tensors its rule actually reads.
  * Nodes get a monotonically increasing sequence number at creation. An input
    always exists before the op that consumes it, so sorting the reachable nodes
    by sequence number (descending) is a valid reverse topological order.
  * After backward the graph is released (inputs and rules dropped), like torch's
    retain_graph=False.
"""
from __future__ import annotations

import contextlib
import itertools
from functools import partial
from typing import Callable, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

_seq = itertools.count()
_grad_mode = {"enabled": True}


@contextlib.contextmanager
def no_grad():
    prev = _grad_mode["enabled"]
    _grad_mode["enabled"] = False
    try:
        yield
    finally:
        _grad_mode["enabled"] = prev


# --------------------------------------------------------------------------- #
# helpers
# --------------------------------------------------------------------------- #
def _reduce_to(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Undo broadcasting: sum ``g`` down to ``shape``."""
    if g.shape == shape:
        return g
    lead = g.dim() - len(shape)
    if lead > 0:
        g = g.sum(dim=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if axes:
        g = g.sum(dim=axes, keepdim=True)
    return g.reshape(shape)


# --------------------------------------------------------------------------- #
# VJP rules: (saved..., g) -> tuple of input gradients
# --------------------------------------------------------------------------- #
def _vjp_add(sa, sb, g):
    return _reduce_to(g, sa), _reduce_to(g, sb)


def _vjp_sub(sa, sb, g):
    return _reduce_to(g, sa), _reduce_to(-g, sb)


def _vjp_mul(a, b, g):
    return _reduce_to(g * b, a.shape), _reduce_to(g * a, b.shape)


def _vjp_div(a, b, g):
    return _reduce_to(g / b, a.shape), _reduce_to(-g * a / (b * b), b.shape)


def _vjp_matmul(a, b, g):
    return g @ b.T, a.T @ g


def _vjp_neg(g):
    return (-g,)


def _vjp_pow(x, p, g):
    return (g * p * x ** (p - 1),)


def _vjp_exp(out, g):
    return (g * out,)


def _vjp_log(x, g):
    return (g / x,)


def _vjp_tanh(out, g):
    return (g * (1 - out * out),)


def _vjp_sigmoid(out, g):
    return (g * out * (1 - out),)


def _vjp_relu(mask, g):
    return (g * mask,)


def _vjp_sum(shape, g):
    return (g.expand(shape).clone(),)


def _vjp_mean(shape, n, g):
    return ((g / n).expand(shape).clone(),)


def _vjp_transpose(g):
    return (g.T,)


def _vjp_reshape(shape, g):
    return (g.reshape(shape),)


def _vjp_maximum(a, b, g):
    win_a = (a > b).to(g.dtype) + 0.5 * (a == b).to(g.dtype)
    return _reduce_to(g * win_a, a.shape), _reduce_to(g * (1 - win_a), b.shape)


def _vjp_max_pool(shape, idx, g):
    n, c, h, w = shape
    gx = torch.zeros(n, c, h * w, dtype=g.dtype)
    gx.scatter_add_(2, idx.flatten(2), g.flatten(2))
    return (gx.reshape(shape),)


def _vjp_avg_pool(shape, k, g):
    n, c, h, w = shape
    ho, wo = g.shape[-2:]
    gx = torch.zeros(shape, dtype=g.dtype)
    up = g.repeat_interleave(k, dim=2).repeat_interleave(k, dim=3) / (k * k)
    gx[:, :, : ho * k, : wo * k] = up
    return (gx,)


def _vjp_conv2d(x, w, g):
    gx = F.conv_transpose2d(g, w)
    gw = F.conv2d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
    return gx, gw


def _vjp_embedding(num_rows, ids, g):
    d = g.shape[len(ids.shape):]
    gw = torch.zeros((num_rows, *d), dtype=g.dtype)
    gw.index_add_(0, ids.reshape(-1), g.reshape(-1, *d))
    return (gw,)


def _vjp_batch_norm(xhat, inv_std, g):
    n = g.shape[0]
    gx = inv_std / n * (n * g - g.sum(0, keepdim=True) - xhat * (g * xhat).sum(0, keepdim=True))
    return (gx,)


def _vjp_cross_entropy(probs, onehot, g):
    return (g * (probs - onehot) / probs.shape[0],)


# --------------------------------------------------------------------------- #
class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = bool(requires_grad)
        self.grad: Optional[torch.Tensor] = None
        self._seq = next(_seq)
        self._inputs: Tuple["Tensor", ...] = ()
        self._rule: Optional[Callable] = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    # -- construction ------------------------------------------------------- #
    @staticmethod
    def _lift(x, like: "Tensor") -> "Tensor":
        if isinstance(x, Tensor):
            return x
        return Tensor(torch.as_tensor(x, dtype=like.data.dtype))

    @classmethod
    def _from_op(cls, data: torch.Tensor, inputs: Sequence["Tensor"], rule: Callable) -> "Tensor":
        out = cls(data)
        if _grad_mode["enabled"] and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._inputs = tuple(inputs)
            out._rule = rule
        return out

    # -- core --------------------------------------------------------------- #
    def __add__(self, other):
        other = Tensor._lift(other, self)
        return Tensor._from_op(self.data + other.data, (self, other),
                               partial(_vjp_add, self.data.shape, other.data.shape))

    def __mul__(self, other):
        other = Tensor._lift(other, self)
        return Tensor._from_op(self.data * other.data, (self, other),
                               partial(_vjp_mul, self.data, other.data))

    def __matmul__(self, other):
        return Tensor._from_op(self.data @ other.data, (self, other),
                               partial(_vjp_matmul, self.data, other.data))

    def relu(self):
        mask = self.data > 0
        return Tensor._from_op(self.data * mask, (self,), partial(_vjp_relu, mask))

    def sum(self):
        return Tensor._from_op(self.data.sum(), (self,), partial(_vjp_sum, self.data.shape))

    # -- extensions --------------------------------------------------------- #
    __radd__ = __add__
    __rmul__ = __mul__

    def __neg__(self):
        return Tensor._from_op(-self.data, (self,), _vjp_neg)

    def __sub__(self, other):
        other = Tensor._lift(other, self)
        return Tensor._from_op(self.data - other.data, (self, other),
                               partial(_vjp_sub, self.data.shape, other.data.shape))

    def __rsub__(self, other):
        return Tensor._lift(other, self) - self

    def __truediv__(self, other):
        other = Tensor._lift(other, self)
        return Tensor._from_op(self.data / other.data, (self, other),
                               partial(_vjp_div, self.data, other.data))

    def __rtruediv__(self, other):
        return Tensor._lift(other, self) / self

    def __pow__(self, p: float):
        return Tensor._from_op(self.data ** p, (self,), partial(_vjp_pow, self.data, p))

    def exp(self):
        out = self.data.exp()
        return Tensor._from_op(out, (self,), partial(_vjp_exp, out))

    def log(self):
        return Tensor._from_op(self.data.log(), (self,), partial(_vjp_log, self.data))

    def tanh(self):
        out = self.data.tanh()
        return Tensor._from_op(out, (self,), partial(_vjp_tanh, out))

    def sigmoid(self):
        out = torch.sigmoid(self.data)
        return Tensor._from_op(out, (self,), partial(_vjp_sigmoid, out))

    def mean(self):
        return Tensor._from_op(self.data.mean(), (self,),
                               partial(_vjp_mean, self.data.shape, self.data.numel()))

    @property
    def T(self):
        return Tensor._from_op(self.data.T, (self,), _vjp_transpose)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        return Tensor._from_op(self.data.reshape(shape), (self,),
                               partial(_vjp_reshape, self.data.shape))

    def maximum(self, other):
        other = Tensor._lift(other, self)
        return Tensor._from_op(torch.maximum(self.data, other.data), (self, other),
                               partial(_vjp_maximum, self.data, other.data))

    def max_pool2d(self, k: int):
        out, idx = F.max_pool2d(self.data, k, return_indices=True)
        return Tensor._from_op(out, (self,), partial(_vjp_max_pool, self.data.shape, idx))

    def avg_pool2d(self, k: int):
        out = F.avg_pool2d(self.data, k)
        return Tensor._from_op(out, (self,), partial(_vjp_avg_pool, self.data.shape, k))

    def conv2d(self, weight: "Tensor"):
        out = F.conv2d(self.data, weight.data)
        return Tensor._from_op(out, (self, weight), partial(_vjp_conv2d, self.data, weight.data))

    def __getitem__(self, ids: torch.Tensor):
        return Tensor._from_op(self.data[ids], (self,),
                               partial(_vjp_embedding, self.data.shape[0], ids))

    def batch_norm(self, eps: float = 1e-5):
        mu = self.data.mean(0, keepdim=True)
        var = self.data.var(0, unbiased=False, keepdim=True)
        inv_std = (var + eps).rsqrt()
        xhat = (self.data - mu) * inv_std
        return Tensor._from_op(xhat, (self,), partial(_vjp_batch_norm, xhat, inv_std))

    def cross_entropy(self, target: torch.Tensor):
        logp = self.data - self.data.logsumexp(dim=1, keepdim=True)
        loss = -logp.gather(1, target[:, None]).mean()
        probs = logp.exp()
        onehot = F.one_hot(target, self.data.shape[1]).to(probs.dtype)
        return Tensor._from_op(loss, (self,), partial(_vjp_cross_entropy, probs, onehot))

    # -- backward ----------------------------------------------------------- #
    def _reachable(self):
        seen, stack, nodes = {id(self)}, [self], []
        while stack:
            node = stack.pop()
            nodes.append(node)
            for inp in node._inputs:
                if inp.requires_grad and id(inp) not in seen:
                    seen.add(id(inp))
                    stack.append(inp)
        return nodes

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for one-element outputs")
            grad = torch.ones_like(self.data)
        else:
            grad = torch.as_tensor(grad, dtype=self.data.dtype).expand(self.data.shape)

        nodes = sorted(self._reachable(), key=lambda t: t._seq, reverse=True)
        pending = {id(self): grad}
        for node in nodes:
            g = pending.pop(id(node), None)
            if g is None:
                continue
            if node._rule is None:  # leaf
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for inp, gi in zip(node._inputs, node._rule(g)):
                if not inp.requires_grad:
                    continue
                key = id(inp)
                pending[key] = gi if key not in pending else pending[key] + gi
            node._inputs, node._rule = (), None
