"""no_grad() switches recording back on when its block ends, whatever it was before.

A ``with no_grad():`` block inside another one ends the outer block's mode early.
"""

import contextlib

import torch

_recording = True


@contextlib.contextmanager
def no_grad():
    global _recording
    _recording = False
    try:
        yield
    finally:
        _recording = True  # the bug: on again, not back to what it was


def _unbroadcast(grad, shape):
    # sum away the axes broadcasting added in front, then the ones it stretched
    while grad.dim() > len(shape):
        grad = grad.sum(0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis, keepdim=True)
    return grad


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._backward = None

    def _make(self, data, parents, backward):
        out = Tensor(data)
        if _recording and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents = parents
            out._backward = backward
        return out

    def __add__(self, other):
        a, b = self.data, other.data
        return self._make(a + b, (self, other), lambda g: (_unbroadcast(g, a.shape), _unbroadcast(g, b.shape)))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._make(a * b, (self, other), lambda g: (_unbroadcast(g * b, a.shape), _unbroadcast(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._make(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return self._make(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        x = self.data
        return self._make(x.sum(), (self,), lambda g: (g * torch.ones_like(x),))

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        shifted = z - z.max(dim=1, keepdim=True).values
        log_probs = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
        rows = torch.arange(n)
        loss = -log_probs[rows, target].mean()

        def backward(g):
            d = log_probs.exp()
            d[rows, target] -= 1
            return (g * d / n,)

        return self._make(loss, (self,), backward)

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        grads = {id(self): grad}
        for t in reversed(self._topo()):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._backward is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t._parents, t._backward(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            t._parents, t._backward = (), None  # done: let the graph go

    def _topo(self):
        # post-order without recursion; a node is marked when popped, so it is finished
        # before any node that consumes it
        order, seen = [], set()
        stack = [(self, False)]
        while stack:
            t, finished = stack.pop()
            if finished:
                order.append(t)
                continue
            if id(t) in seen:
                continue
            seen.add(id(t))
            stack.append((t, True))
            for p in t._parents:
                if id(p) not in seen:
                    stack.append((p, False))
        return order
