"""Tensors only point at the node that produced them; the backward machinery
lives in a separate Graph object built from the output when backward() runs."""

from __future__ import annotations

import torch
import torch.nn.functional as F


class GradMode:
    disabled_depth = 0

    @classmethod
    def enabled(cls) -> bool:
        return cls.disabled_depth == 0


class no_grad:
    def __enter__(self):
        GradMode.disabled_depth += 1

    def __exit__(self, exc_type, exc, tb):
        GradMode.disabled_depth -= 1


def sum_to_shape(g: torch.Tensor, shape) -> torch.Tensor:
    if g.shape == shape:
        return g
    while g.dim() > len(shape):
        g = g.sum(0)
    for d, s in enumerate(shape):
        if s == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


class Node:
    """One recorded op: its input tensors and its vector-Jacobian product."""

    __slots__ = ("inputs", "vjp", "name")

    def __init__(self, name, inputs, vjp):
        self.name = name
        self.inputs = inputs
        self.vjp = vjp


class Graph:
    def __init__(self, root: Tensor):
        self.root = root
        self.order = self._reverse_topological(root)

    @staticmethod
    def _reverse_topological(root: Tensor) -> list[Tensor]:
        post: list[Tensor] = []
        state: dict[int, bool] = {}
        work = [root]
        while work:
            t = work[-1]
            if id(t) not in state:
                state[id(t)] = False
                if t.node is not None:
                    for i in t.node.inputs:
                        if i.requires_grad and id(i) not in state:
                            work.append(i)
                continue
            work.pop()
            if state[id(t)] is False:
                state[id(t)] = True
                post.append(t)
        post.reverse()
        return post

    def run(self, seed: torch.Tensor) -> None:
        grads = {id(self.root): seed}
        for t in self.order:
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.node is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for i, gi in zip(t.node.inputs, t.node.vjp(g)):
                if i.requires_grad:
                    grads[id(i)] = grads[id(i)] + gi if id(i) in grads else gi

    def release(self) -> None:
        for t in self.order:
            t.node = None
        self.order = []


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.node: Node | None = None

    @staticmethod
    def _op(name, data, inputs, vjp) -> Tensor:
        out = Tensor(data)
        if GradMode.enabled() and any(i.requires_grad for i in inputs):
            out.requires_grad = True
            out.node = Node(name, inputs, vjp)
        return out

    def __add__(self, other: Tensor) -> Tensor:
        sa, sb = self.data.shape, other.data.shape
        return self._op("add", self.data + other.data, (self, other),
                        lambda g: (sum_to_shape(g, sa), sum_to_shape(g, sb)))

    def __mul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._op("mul", a * b, (self, other),
                        lambda g: (sum_to_shape(g * b, a.shape), sum_to_shape(g * a, b.shape)))

    def __matmul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._op("matmul", a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self) -> Tensor:
        m = self.data > 0
        return self._op("relu", self.data * m, (self,), lambda g: (g * m,))

    def sum(self) -> Tensor:
        shape = self.data.shape
        return self._op("sum", self.data.sum(), (self,), lambda g: (g.expand(shape).contiguous(),))

    def mean(self) -> Tensor:
        shape, n = self.data.shape, self.data.numel()
        return self._op("mean", self.data.mean(), (self,), lambda g: ((g / n).expand(shape).contiguous(),))

    @property
    def T(self) -> Tensor:
        return self._op("T", self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, shape) -> Tensor:
        old = self.data.shape
        return self._op("reshape", self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def avg_pool2d(self, k: int) -> Tensor:
        x = self.data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        out = x[:, :, :ho * k, :wo * k].reshape(n, c, ho, k, wo, k).mean(dim=(3, 5))

        def vjp(g):
            gx = torch.zeros_like(x)
            block = (g / (k * k)).repeat_interleave(k, dim=2).repeat_interleave(k, dim=3)
            gx[:, :, :ho * k, :wo * k] = block
            return (gx,)

        return self._op("avg_pool2d", out, (self,), vjp)

    def conv2d(self, weight: Tensor) -> Tensor:
        x, w = self.data, weight.data
        kh, kw = w.shape[2], w.shape[3]

        def vjp(g):
            gx = F.conv2d(F.pad(g, (kw - 1, kw - 1, kh - 1, kh - 1)), w.transpose(0, 1))
            gw = F.conv2d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
            return gx, gw

        return self._op("conv2d", F.conv2d(x, w), (self, weight), vjp)

    def backward(self, grad: torch.Tensor | None = None) -> None:
        graph = Graph(self)
        graph.run(torch.ones_like(self.data) if grad is None else grad)
        graph.release()
