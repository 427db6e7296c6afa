"""Autograd engine where the graph is made of small Node objects.

A Tensor owns its Node.  A Node holds *strong* references to the Nodes of its
inputs (the graph has to survive until backward) but only a *weak* reference
back to the Tensor wrapper it belongs to, so the graph never keeps user-facing
Tensor objects alive.  Leaves get their gradient through that weak reference.
After backward every interior node drops its inputs and saved values.
"""
import weakref

import torch


class Node:
    __slots__ = ("owner", "inputs", "vjp", "wants_grad", "__weakref__")

    def __init__(self, owner, inputs, vjp, wants_grad):
        self.owner = weakref.ref(owner)
        self.inputs = inputs        # tuple of Node
        self.vjp = vjp              # None for leaves
        self.wants_grad = wants_grad


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.node = Node(self, (), None, requires_grad)

    @staticmethod
    def _out(value, parents, vjp):
        rg = any(p.requires_grad for p in parents)
        t = Tensor(value, requires_grad=rg)
        if rg:
            t.node.inputs = tuple(p.node for p in parents)
            t.node.vjp = vjp
        return t

    def _other(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.full_like(self.data, float(x)))

    # core
    def __add__(self, other):
        other = self._other(other)
        return Tensor._out(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        other = self._other(other)
        a, b = self.data, other.data
        return Tensor._out(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._out(a @ b, (self, other), lambda g: (g @ b.t(), a.t() @ g))

    def relu(self):
        keep = self.data > 0
        return Tensor._out(torch.where(keep, self.data, 0.0), (self,), lambda g: (g * keep,))

    def sum(self):
        like = self.data
        return Tensor._out(like.sum(), (self,), lambda g: (torch.ones_like(like) * g,))

    # extensions
    def __sub__(self, other):
        other = self._other(other)
        return Tensor._out(self.data - other.data, (self, other), lambda g: (g, -g))

    def __truediv__(self, other):
        other = self._other(other)
        a, b = self.data, other.data
        return Tensor._out(a / b, (self, other), lambda g: (g / b, -g * a / (b * b)))

    def __pow__(self, p):
        a = self.data
        return Tensor._out(a ** p, (self,), lambda g: (g * p * a ** (p - 1),))

    def exp(self):
        e = torch.exp(self.data)
        return Tensor._out(e, (self,), lambda g: (g * e,))

    def mean(self):
        like = self.data
        n = like.numel()
        return Tensor._out(like.mean(), (self,), lambda g: (torch.ones_like(like) * g / n,))

    def batch_norm(self, eps=1e-5):
        x = self.data
        m = x.shape[0]
        mu = x.mean(dim=0, keepdim=True)
        var = x.var(dim=0, keepdim=True)
        rstd = (var + eps).rsqrt()
        xhat = (x - mu) * rstd

        def vjp(g):
            gsum = g.sum(dim=0, keepdim=True)
            gx = rstd / m * (m * g - gsum - xhat * (g * xhat).sum(dim=0, keepdim=True))
            return (gx,)

        return Tensor._out(xhat, (self,), vjp)

    # backward
    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        root = self.node

        order, on_stack, done = [], set(), set()
        stack = [root]
        while stack:
            n = stack[-1]
            if id(n) in done:
                stack.pop()
                continue
            if id(n) not in on_stack:
                on_stack.add(id(n))
                stack.extend(i for i in n.inputs if i.wants_grad and id(i) not in done)
                continue
            stack.pop()
            done.add(id(n))
            order.append(n)

        acc = {id(root): grad}
        for n in reversed(order):
            g = acc.pop(id(n), None)
            if g is None:
                continue
            if n.vjp is None:
                owner = n.owner()
                if owner is not None and owner.requires_grad:
                    owner.grad = g.clone() if owner.grad is None else owner.grad + g
                continue
            for i, gi in zip(n.inputs, n.vjp(g)):
                if i.wants_grad:
                    acc[id(i)] = acc[id(i)] + gi if id(i) in acc else gi

        for n in order:
            if n.vjp is not None:
                n.inputs, n.vjp = (), None
