from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import torch


@dataclass
class _Flags:
    recording: bool = True


FLAGS = _Flags()


class no_grad:
    def __enter__(self):
        self.was = FLAGS.recording
        FLAGS.recording = False

    def __exit__(self, *exc):
        FLAGS.recording = self.was


@dataclass(eq=False)
class Node:
    """How a tensor was made: its inputs and the rule that maps its gradient onto them."""

    inputs: tuple
    rule: Callable


def _fit(g: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    if g.shape == shape:
        return g
    g = g.sum(dim=tuple(range(g.dim() - len(shape)))) if g.dim() > len(shape) else g
    keep = [i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1]
    return g.sum(dim=keep, keepdim=True) if keep else g


@dataclass(eq=False)
class Tensor:
    data: torch.Tensor
    requires_grad: bool = False
    grad: Optional[torch.Tensor] = None
    node: Optional[Node] = field(default=None, repr=False)

    def _derive(self, data, inputs, rule) -> Tensor:
        if FLAGS.recording and any(t.requires_grad for t in inputs):
            return Tensor(data, True, None, Node(inputs, rule))
        return Tensor(data)

    def __add__(self, other: Tensor) -> Tensor:
        sa, sb = self.data.shape, other.data.shape
        return self._derive(self.data + other.data, (self, other), lambda g: (_fit(g, sa), _fit(g, sb)))

    def __mul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._derive(a * b, (self, other), lambda g: (_fit(g * b, a.shape), _fit(g * a, b.shape)))

    def __matmul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._derive(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self) -> Tensor:
        on = self.data > 0
        return self._derive(self.data * on, (self,), lambda g: (g * on,))

    def sum(self) -> Tensor:
        shape = self.data.shape
        return self._derive(self.data.sum(), (self,), lambda g: (torch.ones(shape, dtype=g.dtype) * g,))

    def cross_entropy(self, target: torch.Tensor) -> Tensor:
        logits = self.data
        n = logits.shape[0]
        m = logits.max(dim=1, keepdim=True).values
        lse = m + (logits - m).exp().sum(dim=1, keepdim=True).log()
        picked = logits.gather(1, target.view(-1, 1))
        loss = (lse - picked).mean()
        probs = (logits - lse).exp()

        def rule(g):
            onehot = torch.zeros_like(probs)
            onehot[:, target] = 1.0
            return ((probs - onehot) * g / n,)

        return self._derive(loss, (self,), rule)

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("backward() on a non-scalar output needs a gradient")
            grad = torch.ones_like(self.data)
        order: list[Tensor] = []
        marked: set[int] = set()
        stack = [(self, False)]
        while stack:
            t, done = stack.pop()
            if done:
                order.append(t)
                continue
            if id(t) in marked:
                continue
            marked.add(id(t))
            stack.append((t, True))
            if t.node is not None:
                for i in t.node.inputs:
                    if i.requires_grad and id(i) not in marked:
                        stack.append((i, False))
        grads = {id(self): grad}
        for t in reversed(order):
            g = grads.pop(id(t))
            if t.node is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for i, gi in zip(t.node.inputs, t.node.rule(g)):
                if i.requires_grad:
                    grads[id(i)] = grads[id(i)] + gi if id(i) in grads else gi
        for t in order:
            t.node = None
