"""Autograd engine: a user-facing ``Tensor`` wrapping an internal graph ``Node``.

The ``Tensor`` is the value (``data``, ``grad``, ``requires_grad``); the
``Node`` is its place in the graph (its parents and how to pull a gradient back
through the op that produced it).  Keeping the two apart makes it obvious what
is freed after backward: the nodes are dropped, the tensors stay.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Union

import torch
import torch.nn.functional as F

Number = Union[int, float]
Operand = Union["Tensor", Number]
VJP = Callable[[torch.Tensor], Sequence[torch.Tensor]]

_recording: bool = True


@contextlib.contextmanager
def no_grad() -> Iterator[None]:
    global _recording
    saved: bool = _recording
    _recording = False
    try:
        yield
    finally:
        _recording = saved


def _reduce_to(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    extra: int = grad.dim() - len(shape)
    if extra > 0:
        grad = grad.sum(dim=tuple(range(extra)))
    keep: tuple[int, ...] = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if keep:
        grad = grad.sum(dim=keep, keepdim=True)
    return grad


class Node:

    def __init__(self, parents: tuple[Tensor, ...], vjp: VJP, name: str) -> None:
        self.parents: tuple[Tensor, ...] = parents
        self.vjp: VJP = vjp
        self.name: str = name

    def __repr__(self) -> str:
        return f"<Node {self.name}>"


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False) -> None:
        self.data: torch.Tensor = data
        self.requires_grad: bool = requires_grad
        self.grad: torch.Tensor | None = None
        self.node: Node | None = None

    def __repr__(self) -> str:
        return f"Tensor(shape={tuple(self.data.shape)}, requires_grad={self.requires_grad})"

    # ------------------------------------------------------------------ helpers
    def _as_tensor(self, x: Operand) -> Tensor:
        if isinstance(x, Tensor):
            return x
        return Tensor(torch.tensor(x, dtype=self.data.dtype))

    @staticmethod
    def _op(name: str, data: torch.Tensor, parents: tuple[Tensor, ...], vjp: VJP) -> Tensor:
        out = Tensor(data)
        if _recording and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out.node = Node(parents, vjp, name)
        return out

    # --------------------------------------------------------------------- core
    def __add__(self, other: Operand) -> Tensor:
        o: Tensor = self._as_tensor(other)
        sa: torch.Size = self.data.shape
        sb: torch.Size = o.data.shape
        return Tensor._op("add", self.data + o.data, (self, o),
                          lambda g: (_reduce_to(g, sa), _reduce_to(g, sb)))

    def __radd__(self, other: Number) -> Tensor:
        return self + other

    def __mul__(self, other: Operand) -> Tensor:
        o: Tensor = self._as_tensor(other)
        a: torch.Tensor = self.data
        b: torch.Tensor = o.data
        return Tensor._op("mul", a * b, (self, o),
                          lambda g: (_reduce_to(g * b, a.shape), _reduce_to(g * a, b.shape)))

    def __rmul__(self, other: Number) -> Tensor:
        return self * other

    def __matmul__(self, other: Tensor) -> Tensor:
        a: torch.Tensor = self.data
        b: torch.Tensor = other.data
        return Tensor._op("matmul", a @ b, (self, other),
                          lambda g: (g @ b.transpose(0, 1), a.transpose(0, 1) @ g))

    def relu(self) -> Tensor:
        mask: torch.Tensor = self.data > 0
        return Tensor._op("relu", torch.where(mask, self.data, torch.zeros_like(self.data)), (self,),
                          lambda g: (g * mask,))

    def sum(self) -> Tensor:
        shape: torch.Size = self.data.shape
        return Tensor._op("sum", self.data.sum(), (self,),
                          lambda g: (g * torch.ones(shape, dtype=g.dtype),))

    # ----------------------------------------------------------------- backward
    def _topological(self) -> list[Tensor]:
        """Post-order (inputs before consumers), iterative so deep chains are fine."""
        order: list[Tensor] = []
        done: set[int] = set()
        stack: list[tuple[Tensor, Iterator[Tensor]]] = [(self, iter(self._parents()))]
        done.add(id(self))
        while stack:
            tensor, parents = stack[-1]
            for p in parents:
                if p.requires_grad and id(p) not in done:
                    done.add(id(p))
                    stack.append((p, iter(p._parents())))
                    break
            else:
                stack.pop()
                order.append(tensor)
        return order

    def _parents(self) -> tuple[Tensor, ...]:
        return self.node.parents if self.node is not None else ()

    def backward(self, grad: torch.Tensor | None = None) -> None:
        if not self.requires_grad:
            raise RuntimeError("this tensor does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("backward() without grad needs a one-element tensor")
            grad = torch.ones_like(self.data)
        order: list[Tensor] = self._topological()
        pending: dict[int, torch.Tensor] = {id(self): grad.to(self.data.dtype).reshape(self.data.shape)}
        for tensor in reversed(order):
            g: torch.Tensor = pending.pop(id(tensor))
            tensor.grad = g.clone() if tensor.grad is None else tensor.grad + g
            node: Node | None = tensor.node
            if node is None:
                continue
            for parent, pg in zip(node.parents, node.vjp(g)):
                if not parent.requires_grad:
                    continue
                key: int = id(parent)
                pending[key] = pg if key not in pending else pending[key] + pg
        for tensor in order:
            tensor.node = None

    # --------------------------------------------------------------- extensions
    def __neg__(self) -> Tensor:
        return Tensor._op("neg", -self.data, (self,), lambda g: (-g,))

    def __sub__(self, other: Operand) -> Tensor:
        o: Tensor = self._as_tensor(other)
        sa: torch.Size = self.data.shape
        sb: torch.Size = o.data.shape
        return Tensor._op("sub", self.data - o.data, (self, o),
                          lambda g: (_reduce_to(g, sa), _reduce_to(-g, sb)))

    def __rsub__(self, other: Number) -> Tensor:
        return self._as_tensor(other) - self

    def __truediv__(self, other: Operand) -> Tensor:
        o: Tensor = self._as_tensor(other)
        a: torch.Tensor = self.data
        b: torch.Tensor = o.data
        return Tensor._op("div", a / b, (self, o),
                          lambda g: (_reduce_to(g / b, a.shape), _reduce_to(-g * a / b ** 2, b.shape)))

    def __rtruediv__(self, other: Number) -> Tensor:
        return self._as_tensor(other) / self

    def __pow__(self, p: Number) -> Tensor:
        x: torch.Tensor = self.data
        return Tensor._op("pow", x ** p, (self,), lambda g: (g * p * x ** (p - 1),))

    def exp(self) -> Tensor:
        y: torch.Tensor = torch.exp(self.data)
        return Tensor._op("exp", y, (self,), lambda g: (g * y,))

    def log(self) -> Tensor:
        x: torch.Tensor = self.data
        return Tensor._op("log", torch.log(x), (self,), lambda g: (g / x,))

    def tanh(self) -> Tensor:
        y: torch.Tensor = torch.tanh(self.data)
        return Tensor._op("tanh", y, (self,), lambda g: (g * (1 - y ** 2),))

    def sigmoid(self) -> Tensor:
        y: torch.Tensor = 1 / (1 + torch.exp(-self.data))
        return Tensor._op("sigmoid", y, (self,), lambda g: (g * y * (1 - y),))

    def mean(self) -> Tensor:
        shape: torch.Size = self.data.shape
        n: int = self.data.numel()
        return Tensor._op("mean", self.data.mean(), (self,),
                          lambda g: (g * torch.ones(shape, dtype=g.dtype) / n,))

    @property
    def T(self) -> Tensor:
        return Tensor._op("T", self.data.t(), (self,), lambda g: (g.t(),))

    def reshape(self, *shape: int | tuple[int, ...]) -> Tensor:
        target = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        old: torch.Size = self.data.shape
        return Tensor._op("reshape", self.data.reshape(target), (self,), lambda g: (g.reshape(old),))

    def maximum(self, other: Operand) -> Tensor:
        o: Tensor = self._as_tensor(other)
        a: torch.Tensor = self.data
        b: torch.Tensor = o.data
        share_a: torch.Tensor = torch.where(a > b, 1.0, torch.where(a == b, 0.5, 0.0)).to(a.dtype)
        return Tensor._op("maximum", torch.maximum(a, b), (self, o),
                          lambda g: (_reduce_to(g * share_a, a.shape), _reduce_to(g * (1 - share_a), b.shape)))

    def _windows(self, k: int) -> torch.Tensor:
        n, c, h, w = self.data.shape
        x = self.data[:, :, : h // k * k, : w // k * k]
        return x.reshape(n, c, h // k, k, w // k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, h // k, w // k, k * k)

    def _from_windows(self, win: torch.Tensor, k: int) -> torch.Tensor:
        n, c, h, w = self.data.shape
        ho, wo = h // k, w // k
        full = win.reshape(n, c, ho, wo, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)
        out = torch.zeros_like(self.data)
        out[:, :, : ho * k, : wo * k] = full
        return out

    def max_pool2d(self, k: int) -> Tensor:
        win: torch.Tensor = self._windows(k)
        best: torch.Tensor = win.argmax(dim=-1, keepdim=True)
        out: torch.Tensor = win.gather(-1, best).squeeze(-1)

        def vjp(g: torch.Tensor) -> tuple[torch.Tensor]:
            gw = torch.zeros_like(win).scatter(-1, best, g.unsqueeze(-1))
            return (self._from_windows(gw, k),)

        return Tensor._op("max_pool2d", out, (self,), vjp)

    def avg_pool2d(self, k: int) -> Tensor:
        win: torch.Tensor = self._windows(k)

        def vjp(g: torch.Tensor) -> tuple[torch.Tensor]:
            gw = (g / (k * k)).unsqueeze(-1).expand(win.shape)
            return (self._from_windows(gw, k),)

        return Tensor._op("avg_pool2d", win.mean(dim=-1), (self,), vjp)

    def conv2d(self, weight: Tensor) -> Tensor:
        x: torch.Tensor = self.data
        w: torch.Tensor = weight.data

        def vjp(g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            gx: torch.Tensor = F.conv_transpose2d(g, w)
            gw: torch.Tensor = F.conv2d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
            return gx, gw

        return Tensor._op("conv2d", F.conv2d(x, w), (self, weight), vjp)

    def __getitem__(self, ids: torch.Tensor) -> Tensor:
        table: torch.Tensor = self.data

        def vjp(g: torch.Tensor) -> tuple[torch.Tensor]:
            gt = torch.zeros_like(table)
            gt.index_put_((ids,), g, accumulate=True)
            return (gt,)

        return Tensor._op("getitem", table[ids], (self,), vjp)

    def batch_norm(self, eps: float = 1e-5) -> Tensor:
        x: torch.Tensor = self.data
        m: int = x.shape[0]
        centred: torch.Tensor = x - x.mean(dim=0)
        var: torch.Tensor = (centred ** 2).mean(dim=0)
        rstd: torch.Tensor = (var + eps).rsqrt()
        y: torch.Tensor = centred * rstd

        def vjp(g: torch.Tensor) -> tuple[torch.Tensor]:
            gy_mean: torch.Tensor = g.mean(dim=0)
            gyy_mean: torch.Tensor = (g * y).mean(dim=0)
            return ((g - gy_mean - y * gyy_mean) * rstd,)

        return Tensor._op("batch_norm", y, (self,), vjp)

    def cross_entropy(self, target: torch.Tensor) -> Tensor:
        z: torch.Tensor = self.data
        n: int = z.shape[0]
        shifted: torch.Tensor = z - z.max(dim=1, keepdim=True).values
        log_p: torch.Tensor = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
        loss: torch.Tensor = -log_p.gather(1, target.view(-1, 1)).mean()
        onehot: torch.Tensor = F.one_hot(target, z.shape[1]).to(z.dtype)

        def vjp(g: torch.Tensor) -> tuple[torch.Tensor]:
            return (g * (log_p.exp() - onehot) / n,)

        return Tensor._op("cross_entropy", loss, (self,), vjp)
