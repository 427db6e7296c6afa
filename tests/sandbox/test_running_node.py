"""An exception in backward names the node whose rule raised, whatever the engine's style.

Each engine below computes ``h = r @ w`` from ``r = x.relu()`` and sums it; its matmul rule
raises (a missing transpose). The node named must be ``h = r @ w``, not ``r`` (the rule's
operand) nor the root (the node ``backward()`` was called on).
"""

from __future__ import annotations

import textwrap

import pytest
import torch

from harness.sandbox.worker.running_node import running_node

CLOSURES = """
class Tensor:
    def __init__(self, data, _prev=()):
        self.data, self.grad, self._prev, self._backward = data, None, _prev, lambda: None

    def _acc(self, g):
        self.grad = g if self.grad is None else self.grad + g

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, (self, other))
        out._backward = lambda: (self._acc(out.grad @ other.data), other._acc(self.data.T @ out.grad))
        return out

    def relu(self):
        out = Tensor(self.data.clamp(min=0), (self,))
        def _backward():
            self._acc((self.data > 0) * out.grad)
        out._backward = _backward
        return out

    def sum(self):
        out = Tensor(self.data.sum(), (self,))
        def _backward():
            self._acc(torch.ones_like(self.data) * out.grad)
        out._backward = _backward
        return out

    def backward(self):
        topo, seen = [], set()
        def visit(v):
            if v not in seen:
                seen.add(v)
                for p in v._prev:
                    visit(p)
                topo.append(v)
        visit(self)
        for node in topo:
            node.grad = None
        self.grad = torch.ones_like(self.data)
        for v in reversed(topo):
            v._backward()
"""

FUNCTIONS = """
class MatMul:
    @staticmethod
    def backward(ctx, g):
        a, b = ctx.parents
        return g @ b.data, a.data.T @ g

class ReLU:
    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.parents
        return ((a.data > 0) * g,)

class Sum:
    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.parents
        return (torch.ones_like(a.data) * g,)

class Ctx:
    def __init__(self, fn, *parents):
        self.fn, self.parents = fn, parents

class Tensor:
    def __init__(self, data, ctx=None):
        self.data, self.grad, self._ctx = data, None, ctx

    def __matmul__(self, other):
        return Tensor(self.data @ other.data, Ctx(MatMul, self, other))

    def relu(self):
        return Tensor(self.data.clamp(min=0), Ctx(ReLU, self))

    def sum(self):
        return Tensor(self.data.sum(), Ctx(Sum, self))
"""

ITERATIVE = FUNCTIONS + """
    def backward(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            t, done = stack.pop()
            if done:
                order.append(t)
            elif id(t) not in seen:
                seen.add(id(t))
                stack.append((t, True))
                stack.extend((p, False) for p in (t._ctx.parents if t._ctx else ()))
        self.grad = torch.ones_like(self.data)
        for t in reversed(order):
            if t._ctx is not None:
                for p, g in zip(t._ctx.parents, t._ctx.fn.backward(t._ctx, t.grad)):
                    p.grad = g if p.grad is None else p.grad + g
"""

RECURSIVE = FUNCTIONS + """
    def backward(self, grad=None):
        self.grad = torch.ones_like(self.data) if grad is None else grad
        if self._ctx is None:
            return
        for p, g in zip(self._ctx.parents, self._ctx.fn.backward(self._ctx, self.grad)):
            p.backward(g)
"""

METHODS = """
class Tensor:
    def __init__(self, data, op="", parents=()):
        self.data, self.grad, self.op, self.parents = data, None, op, parents

    def __matmul__(self, other):
        return Tensor(self.data @ other.data, "matmul", (self, other))

    def relu(self):
        return Tensor(self.data.clamp(min=0), "relu", (self,))

    def sum(self):
        return Tensor(self.data.sum(), "sum", (self,))

    def _push(self, g):
        self.grad = g if self.grad is None else self.grad + g

    def _rule(self):
        a = self.parents[0]
        if self.op == "matmul":
            b = self.parents[1]
            a._push(self.grad @ b.data)
            b._push(a.data.T @ self.grad)
        elif self.op == "relu":
            a._push((a.data > 0) * self.grad)
        elif self.op == "sum":
            a._push(torch.ones_like(a.data) * self.grad)

    def backward(self):
        order, seen = [], set()
        def visit(t):
            if id(t) not in seen:
                seen.add(id(t))
                for p in t.parents:
                    visit(p)
                order.append(t)
        visit(self)
        self.grad = torch.ones_like(self.data)
        for node in reversed(order):
            if node.parents:
                node._rule()
"""


@pytest.mark.parametrize("source", [CLOSURES, ITERATIVE, RECURSIVE, METHODS],
                         ids=["closures", "ctx_iterative", "ctx_recursive", "method_rules"])
def test_the_node_named_is_the_one_whose_rule_raised(source, tmp_path):
    filename = str(tmp_path / "engine.py")
    engine: dict = {"torch": torch}
    exec(compile(textwrap.dedent(source), filename, "exec"), engine)
    Tensor = engine["Tensor"]
    x = Tensor(torch.tensor([[1.0, -2.0, 0.5]]))
    w = Tensor(torch.tensor([[2.0, 1.0], [1.0, 0.0], [-1.0, 3.0]]))
    r = x.relu()
    h = r @ w
    y = h.sum()
    described = {"r": (r, "r = x.relu()"), "h": (h, "h = r @ w"), "y": (y, "y = h.sum()")}
    nodes = {id(t): text for t, text in described.values()}
    with pytest.raises(RuntimeError, match="cannot be multiplied") as raised:
        y.backward()
    assert running_node(raised.value.__traceback__, nodes, [t for t, _ in described.values()], filename) \
        == "h = r @ w"
