"""
Autograd split in two: tensors are plain value holders, and a single ``Engine``
object owns everything about differentiation -- whether recording is on, how a
result is linked to its inputs (a ``Context``), and how a backward pass is
scheduled and run.
"""
from __future__ import annotations

import contextlib
from typing import Callable, List, Optional, Tuple

import torch


class Context:
    __slots__ = ("inputs", "rule")

    def __init__(self, inputs: Tuple["Tensor", ...], rule: Callable):
        self.inputs = inputs
        self.rule = rule


class Engine:
    def __init__(self) -> None:
        self.recording = True

    # -- recording ----------------------------------------------------------
    @contextlib.contextmanager
    def paused(self):
        before = self.recording
        self.recording = False
        try:
            yield
        finally:
            self.recording = before

    def link(self, value: torch.Tensor, inputs: Tuple["Tensor", ...], rule: Callable) -> "Tensor":
        out = Tensor(value)
        if self.recording and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._ctx = Context(inputs, rule)
        return out

    # -- backward -------------------------------------------------------------
    @staticmethod
    def schedule(root: "Tensor") -> List["Tensor"]:
        """Tensors reachable from root, every consumer before its inputs."""
        post: List[Tensor] = []
        entered = {id(root)}
        frames = [(root, 0)]
        while frames:
            t, k = frames[-1]
            ins = t._ctx.inputs if t._ctx is not None else ()
            if k < len(ins):
                frames[-1] = (t, k + 1)
                nxt = ins[k]
                if nxt.requires_grad and id(nxt) not in entered:
                    entered.add(id(nxt))
                    frames.append((nxt, 0))
            else:
                frames.pop()
                post.append(t)
        post.reverse()
        return post

    def run(self, root: "Tensor", seed: torch.Tensor) -> None:
        order = self.schedule(root)
        pending = {id(root): seed}
        for t in order:
            g = pending.pop(id(t), None)
            ctx = t._ctx
            if ctx is None:
                if g is not None and t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            t._ctx = None                       # free the graph as we go
            if g is None:
                continue
            for inp, gi in zip(ctx.inputs, ctx.rule(g)):
                if gi is not None and inp.requires_grad:
                    pending[id(inp)] = pending[id(inp)] + gi if id(inp) in pending else gi


ENGINE = Engine()


def no_grad():
    return ENGINE.paused()


# --- the rules (gradient of output -> gradients of inputs) ------------------

def _conv2d_rule(x: torch.Tensor, w: torch.Tensor):
    kh, kw = w.shape[2], w.shape[3]
    ho, wo = x.shape[2] - kh + 1, x.shape[3] - kw + 1

    def rule(g):
        gx = torch.zeros_like(x)
        gw = torch.zeros_like(w)
        for i in range(kh):
            for j in range(kw):
                patch = x[:, :, i:i + ho, j:j + wo]
                gw[:, :, i, j] = torch.einsum("nohw,nchw->oc", g, patch)
                gx[:, :, i:i + ho, j:j + wo] = torch.einsum("nohw,oc->nchw", g, w[:, :, i, j])
        return gx, gw

    return rule


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: Optional[torch.Tensor] = None
        self._ctx: Optional[Context] = None

    def __add__(self, other):
        return ENGINE.link(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return ENGINE.link(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return ENGINE.link(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        mask = self.data > 0
        return ENGINE.link(self.data * mask, (self,), lambda g: (g * mask,))

    def sum(self):
        shape = self.data.shape
        return ENGINE.link(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return ENGINE.link(self.data.mean(), (self,), lambda g: (g.expand(shape) / n,))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = shape[0]
        old = self.data.shape
        return ENGINE.link(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def conv2d(self, weight):
        x, w = self.data, weight.data
        kh, kw = w.shape[2], w.shape[3]
        ho, wo = x.shape[2] - kh + 1, x.shape[3] - kw + 1
        out = torch.zeros(x.shape[0], w.shape[0], ho, wo, dtype=x.dtype)
        for i in range(kh):
            for j in range(kw):
                out += torch.einsum("nchw,oc->nohw", x[:, :, i:i + ho, j:j + wo], w[:, :, i, j])
        return ENGINE.link(out, (self, weight), _conv2d_rule(x, w))

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        if grad is None:
            grad = torch.ones_like(self.data)
        ENGINE.run(self, grad)
