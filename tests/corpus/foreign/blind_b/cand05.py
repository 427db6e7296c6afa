from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Optional

import torch


class _GradMode:
    enabled: bool = True


@contextlib.contextmanager
def no_grad():
    previous, _GradMode.enabled = _GradMode.enabled, False
    try:
        yield
    finally:
        _GradMode.enabled = previous


def _sum_to(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    while grad.dim() > len(shape):
        grad = grad.sum(dim=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(dim=axis, keepdim=True)
    return grad


class Tensor:
    """A torch tensor that remembers the op that produced it."""

    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: Optional[torch.Tensor] = None
        self._inputs: tuple[Tensor, ...] = ()
        self._vjp: Optional[Callable[[torch.Tensor], tuple]] = None

    # ------------------------------------------------------------ properties
    @property
    def shape(self) -> torch.Size:
        return self.data.shape

    @property
    def is_leaf(self) -> bool:
        return self._vjp is None

    @property
    def T(self) -> Tensor:
        return self._derive(self.data.T, (self,), lambda g: (g.T,))

    def __repr__(self) -> str:
        return f"Tensor({self.data.tolist()}, requires_grad={self.requires_grad})"

    # -------------------------------------------------------------- internals
    @staticmethod
    def _coerce(value, like: Tensor) -> Tensor:
        if isinstance(value, Tensor):
            return value
        return Tensor(torch.as_tensor(value, dtype=like.data.dtype))

    @staticmethod
    def _derive(data: torch.Tensor, inputs: tuple, vjp: Callable) -> Tensor:
        out = Tensor(data)
        if _GradMode.enabled and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._inputs = inputs
            out._vjp = vjp
        return out

    def _ancestors(self) -> Iterator[Tensor]:
        """Yield every node reachable from self, each after all of its inputs."""
        emitted: set[int] = set()
        stack: list[tuple[Tensor, bool]] = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in emitted:
                continue
            if expanded:
                emitted.add(id(node))
                yield node
            else:
                stack.append((node, True))
                stack.extend((t, False) for t in node._inputs
                             if t.requires_grad and id(t) not in emitted)

    # --------------------------------------------------------------------- ops
    def __add__(self, other) -> Tensor:
        other = Tensor._coerce(other, self)
        return Tensor._derive(self.data + other.data, (self, other),
                              lambda g: (_sum_to(g, self.shape), _sum_to(g, other.shape)))

    def __radd__(self, other) -> Tensor:
        return self + other

    def __mul__(self, other) -> Tensor:
        other = Tensor._coerce(other, self)
        a, b = self.data, other.data
        return Tensor._derive(a * b, (self, other),
                              lambda g: (_sum_to(g * b, a.shape), _sum_to(g * a, b.shape)))

    def __rmul__(self, other) -> Tensor:
        return self * other

    def __matmul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return Tensor._derive(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def __neg__(self) -> Tensor:
        return Tensor._derive(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other) -> Tensor:
        return self + (-Tensor._coerce(other, self))

    def __rsub__(self, other) -> Tensor:
        return Tensor._coerce(other, self) + (-self)

    def __getitem__(self, ids: torch.Tensor) -> Tensor:
        """Embedding lookup: rows of self picked by int64 ids (any shape)."""
        table = self.data

        def vjp(g):
            full = torch.zeros_like(table)
            full[ids] += g
            return (full,)
        return Tensor._derive(table[ids], (self,), vjp)

    def relu(self) -> Tensor:
        mask = self.data > 0
        return Tensor._derive(self.data * mask, (self,), lambda g: (g * mask,))

    def exp(self) -> Tensor:
        y = self.data.exp()
        return Tensor._derive(y, (self,), lambda g: (g * y,))

    def log(self) -> Tensor:
        x = self.data
        return Tensor._derive(x.log(), (self,), lambda g: (g / x,))

    def tanh(self) -> Tensor:
        y = self.data.tanh()
        return Tensor._derive(y, (self,), lambda g: (g * (1 - y * y),))

    def sigmoid(self) -> Tensor:
        y = self.data.sigmoid()
        return Tensor._derive(y, (self,), lambda g: (g * y * (1 - y),))

    def maximum(self, other) -> Tensor:
        other = Tensor._coerce(other, self)
        a, b = self.data, other.data
        first = (a > b).to(a.dtype) + 0.5 * (a == b).to(a.dtype)
        return Tensor._derive(torch.maximum(a, b), (self, other),
                              lambda g: (_sum_to(g * first, a.shape), _sum_to(g * (1 - first), b.shape)))

    def sum(self) -> Tensor:
        return Tensor._derive(self.data.sum(), (self,), lambda g: (g.expand(self.shape),))

    def mean(self) -> Tensor:
        n = self.data.numel()
        return Tensor._derive(self.data.mean(), (self,), lambda g: (g.expand(self.shape) / n,))

    def reshape(self, shape) -> Tensor:
        return Tensor._derive(self.data.reshape(shape), (self,), lambda g: (g.reshape(self.shape),))

    def batch_norm(self, eps: float = 1e-5) -> Tensor:
        """Normalise over axis 0 (batch statistics, biased variance), no affine."""

    def cross_entropy(self, target: torch.Tensor) -> Tensor:
        logits = self.data
        n = logits.shape[0]
        log_probs = logits - torch.logsumexp(logits, dim=1, keepdim=True)
        picked = log_probs[torch.arange(n), target]

        def vjp(g):
            d = log_probs.exp()
            d[torch.arange(n), target] -= 1.0
            return (g * d / n,)
        return Tensor._derive(-picked.mean(), (self,), vjp)

    # ---------------------------------------------------------------- backward
    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        pending = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(list(self._ancestors())):
            g = pending.pop(id(node))
            if node.is_leaf:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for inp, g_inp in zip(node._inputs, node._vjp(g)):
                if inp.requires_grad:
                    pending[id(inp)] = pending[id(inp)] + g_inp if id(inp) in pending else g_inp
            node._inputs, node._vjp = (), None      # let intermediates be freed
