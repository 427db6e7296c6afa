"""
Reverse accumulation with an explicit adjoint map.

x_bar (the "adjoint" of x) is d(output)/d(x).  Every node stores, for each of
its arguments, a pullback: a function taking the node's adjoint to that
argument's share of the adjoint.  backward() zero-initialises an adjoint for
every node in the graph, seeds the output with 1 and sweeps the nodes in reverse
topological order, adding each pullback into the argument's adjoint.
"""
import contextlib

import torch

_recording = True


@contextlib.contextmanager
def no_grad():
    global _recording
    saved = _recording
    _recording = False
    try:
        yield
    finally:
        _recording = saved


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._args = ()
        self._pullbacks = ()

    @classmethod
    def _node(cls, value, args, pullbacks):
        t = cls(value)
        if _recording and any(a.requires_grad for a in args):
            t.requires_grad = True
            t._args = tuple(args)
            t._pullbacks = tuple(pullbacks)
        return t

    # ---- core
    def __add__(self, other):
        return Tensor._node(self.data + other.data, (self, other),
                            (lambda gbar: gbar, lambda gbar: gbar))

    def __mul__(self, other):
        x, y = self.data, other.data
        return Tensor._node(x * y, (self, other),
                            (lambda gbar: gbar * y, lambda gbar: gbar * x))

    def __matmul__(self, other):
        x, y = self.data, other.data
        return Tensor._node(x @ y, (self, other),
                            (lambda gbar: gbar @ y.t(), lambda gbar: x.t() @ gbar))

    def relu(self):
        active = (self.data > 0).to(self.data.dtype)
        return Tensor._node(self.data * active, (self,), (lambda gbar: gbar * active,))

    def sum(self):
        ones = torch.ones_like(self.data)
        return Tensor._node(self.data.sum(), (self,), (lambda gbar: gbar * ones,))

    # ---- extensions
    def __neg__(self):
        return Tensor._node(-self.data, (self,), (lambda gbar: -gbar,))

    def __sub__(self, other):
        return Tensor._node(self.data - other.data, (self, other),
                            (lambda gbar: gbar, lambda gbar: -gbar))

    def tanh(self):
        t = torch.tanh(self.data)
        return Tensor._node(t, (self,), (lambda gbar: gbar * (1.0 - t * t),))

    def mean(self):
        n = len(self.data)
        ones = torch.ones_like(self.data)
        return Tensor._node(self.data.sum() / n, (self,), (lambda gbar: gbar * ones / n,))

    # ---- reverse sweep
    def _sorted_nodes(self):
        order, done = [], set()
        stack = [self]
        while stack:
            node = stack[-1]
            if id(node) in done:
                stack.pop()
                continue
            todo = [a for a in node._args if a.requires_grad and id(a) not in done]
            if todo:
                stack.extend(todo)
            else:
                done.add(id(node))
                order.append(node)
                stack.pop()
        return order

    def backward(self):
        nodes = self._sorted_nodes()
        adjoint = {id(n): torch.zeros_like(n.data) for n in nodes}
        adjoint[id(self)] += 1.0
        for node in reversed(nodes):
            xbar = adjoint[id(node)]
            for arg, pullback in zip(node._args, node._pullbacks):
                if arg.requires_grad:
                    adjoint[id(arg)] += pullback(xbar)
        for node in nodes:
            if not node._args and node.requires_grad:
                if node.grad is None:
                    node.grad = adjoint[id(node)]
                else:
                    node.grad = node.grad + adjoint[id(node)]
