from __future__ import annotations

import torch

_RECORDING = True


class no_grad:
    """Context manager: ops inside it are not recorded."""

    def __enter__(self):
        global _RECORDING
        self._prev = _RECORDING
        _RECORDING = False

    def __exit__(self, exc_type, exc, tb):
        global _RECORDING
        _RECORDING = self._prev


def _unbroadcast(grad: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    lead = grad.ndim - len(shape)
    if lead:
        grad = grad.sum(dim=tuple(range(lead)))
    axes = [i for i, n in enumerate(shape) if n == 1 and grad.shape[i] > 1]
    if axes:
        grad = grad.sum(dim=axes, keepdim=True)
    return grad


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: torch.Tensor | None = None
        self._inputs: tuple[Tensor, ...] = ()
        self._grad_fn = None  # g -> tuple of input grads

    @staticmethod
    def _result(data, inputs, grad_fn) -> Tensor:
        rg = _RECORDING and any(t.requires_grad for t in inputs)
        out = Tensor(data, requires_grad=rg)
        if rg:
            out._inputs = inputs
            out._grad_fn = grad_fn
        return out

    def __add__(self, other: Tensor) -> Tensor:
        sa, sb = self.data.shape, other.data.shape
        return self._result(self.data + other.data, (self, other),
                            lambda g: (_unbroadcast(g, sa), _unbroadcast(g, sb)))

    def __mul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._result(a * b, (self, other),
                            lambda g: (_unbroadcast(g * b, a.shape), _unbroadcast(g * a, b.shape)))

    def __matmul__(self, other: Tensor) -> Tensor:
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.mT, a.mT @ g))

    def relu(self) -> Tensor:
        pos = self.data > 0
        return self._result(torch.where(pos, self.data, torch.zeros_like(self.data)), (self,),
                            lambda g: (torch.where(pos, g, torch.zeros_like(g)),))

    def sum(self) -> Tensor:
        shape = self.data.shape
        return self._result(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def mean(self) -> Tensor:
        shape, n = self.data.shape, self.data.numel()
        return self._result(self.data.mean(), (self,), lambda g: ((g / n).expand(shape).clone(),))

    @property
    def T(self) -> Tensor:
        return self._result(self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, shape) -> Tensor:
        old = self.data.shape
        return self._result(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def cross_entropy(self, target: torch.Tensor) -> Tensor:
        x = self.data
        n = x.shape[0]
        shifted = x - x.amax(dim=1, keepdim=True)
        lse = shifted.exp().sum(dim=1).log()
        picked = shifted.gather(1, target.view(-1, 1)).squeeze(1)
        loss = (lse - picked).mean()

        def grad_fn(g):
            p = torch.softmax(shifted, dim=1)
            onehot = torch.zeros_like(p).scatter_(1, target.view(-1, 1), 1.0)
            return ((p - onehot) * (g / n),)

        return self._result(loss, (self,), grad_fn)

    # ------------------------------------------------------------------ backward

    def _toposort(self) -> list[Tensor]:
        order: list[Tensor] = []
        seen = {self}
        stack = [(self, False)]
        while stack:
            node, processed = stack.pop()
            if processed:
                order.append(node)
                continue
            stack.append((node, True))
            for parent in node._inputs:
                if parent.requires_grad and parent not in seen:
                    seen.add(parent)
                    stack.append((parent, False))
        order.reverse()
        return order

    def backward(self, grad: torch.Tensor | None = None) -> None:
        order = self._toposort()
        grads = {self: torch.ones_like(self.data) if grad is None else grad}
        for node in order:
            g = grads.pop(node, None)
            if g is None:
                continue
            if node._grad_fn is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for parent, pg in zip(node._inputs, node._grad_fn(g)):
                if parent.requires_grad:
                    grads[parent] = grads[parent] + pg if parent in grads else pg
            node._inputs, node._grad_fn = (), None
