from __future__ import annotations

from collections import deque
from contextlib import contextmanager

import torch

_tracking = True


@contextmanager
def no_grad():
    global _tracking
    before, _tracking = _tracking, False
    try:
        yield
    finally:
        _tracking = before


def _shrink(g: torch.Tensor, shape) -> torch.Tensor:
    if g.shape == shape:
        return g
    g = g.sum(dim=tuple(range(g.dim() - len(shape)))) if g.dim() > len(shape) else g
    keep = [d for d, n in enumerate(shape) if n == 1 and g.shape[d] != 1]
    return g.sum(dim=keep, keepdim=True) if keep else g


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._op: str | None = None
        self._src: tuple = ()
        self._aux = None

    # every op goes through here
    def _emit(self, op: str, data: torch.Tensor, src: tuple, aux=None) -> Tensor:
        out = Tensor(data)
        if _tracking and any(s.requires_grad for s in src):
            out.requires_grad = True
            out._op, out._src, out._aux = op, src, aux
        return out

    def _coerce(self, x) -> Tensor:
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o):
        o = self._coerce(o)
        return self._emit("add", self.data + o.data, (self, o))

    def __radd__(self, o):
        return self._coerce(o) + self

    def __sub__(self, o):
        o = self._coerce(o)
        return self._emit("sub", self.data - o.data, (self, o))

    def __rsub__(self, o):
        return self._coerce(o) - self

    def __mul__(self, o):
        o = self._coerce(o)
        return self._emit("mul", self.data * o.data, (self, o))

    def __rmul__(self, o):
        return self._coerce(o) * self

    def __neg__(self):
        return self._emit("neg", -self.data, (self,))

    def __matmul__(self, o):
        return self._emit("matmul", self.data @ o.data, (self, o))

    def __pow__(self, p):
        return self._emit("pow", self.data ** p, (self,), p)

    def relu(self):
        return self._emit("relu", self.data.clamp_min(0), (self,))

    def exp(self):
        return self._emit("exp", self.data.exp(), (self,))

    def log(self):
        return self._emit("log", self.data.log(), (self,))

    def tanh(self):
        return self._emit("tanh", self.data.tanh(), (self,))

    def sum(self):
        return self._emit("sum", self.data.sum(), (self,))

    def mean(self):
        return self._emit("mean", self.data.mean(), (self,))

    @property
    def T(self):
        return self._emit("transpose", self.data.T, (self,))

    def reshape(self, shape):
        return self._emit("reshape", self.data.reshape(shape), (self,))

    # --------------------------------------------------------------- rules
    def _rule(self, g: torch.Tensor) -> tuple:
        out = self.data
        match self._op, self._src:
            case "add", (a, b):
                return _shrink(g, a.data.shape), _shrink(g, b.data.shape)
            case "sub", (a, b):
                return _shrink(g, a.data.shape), _shrink(-g, b.data.shape)
            case "mul", (a, b):
                return _shrink(g * b.data, a.data.shape), _shrink(g * a.data, b.data.shape)
            case "neg", _:
                return (-g,)
            case "matmul", (a, b):
                return g @ b.data.T, a.data.T @ g
            case "pow", (a,):
                p = self._aux
                return (g * p * a.data ** (p - 1),)
            case "relu", _:
                return (g * out,)
            case "exp", _:
                return (g * out,)
            case "log", (a,):
                return (g / a.data,)
            case "tanh", _:
                return (g * (1 - out * out),)
            case "sum", (a,):
                return (g.expand_as(a.data).clone(),)
            case "mean", (a,):
                return (g.expand_as(a.data) / a.data.numel(),)
            case "transpose", _:
                return (g.T,)
            case "reshape", (a,):
                return (g.reshape(a.data.shape),)
            case other:
                raise RuntimeError(f"no backward rule for {other}")

    def backward(self, grad: torch.Tensor | None = None) -> None:
        # Kahn: count how many edges lead into each node from its consumers
        pending_users: dict[int, int] = {}
        stack, seen = [self], {id(self)}
        while stack:
            t = stack.pop()
            for s in t._src:
                if not s.requires_grad:
                    continue
                pending_users[id(s)] = pending_users.get(id(s), 0) + 1
                if id(s) not in seen:
                    seen.add(id(s))
                    stack.append(s)

        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        ready = deque([self])
        while ready:
            t = ready.popleft()
            g = grads.pop(id(t))
            if t._op is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for s, gs in zip(t._src, t._rule(g)):
                if not s.requires_grad:
                    continue
                k = id(s)
                grads[k] = gs if k not in grads else grads[k] + gs
                pending_users[k] -= 1
                if pending_users[k] == 0:
                    ready.append(s)
            t._op, t._src, t._aux = None, (), None
