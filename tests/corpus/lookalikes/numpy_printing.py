"""A correct core engine that prints its tensors and graphs with numpy.

numpy is for looking at numbers; every gradient is still computed by the rules
below, on torch tensors.
"""

import numpy as np
import torch

np.set_printoptions(precision=4, suppress=True)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = "leaf"
        self.parents = ()
        self.rule = None

    def __repr__(self):
        values = np.array2string(np.asarray(self.data.tolist()), separator=", ")
        return f"Tensor({values}, op={self.op}, requires_grad={self.requires_grad})"

    def describe(self):
        """The graph below this tensor, one line per node, for debugging."""
        lines, todo, seen = [], [(self, 0)], set()
        while todo:
            t, depth = todo.pop()
            if id(t) in seen:
                continue
            seen.add(id(t))
            lines.append("  " * depth + repr(t))
            todo.extend((p, depth + 1) for p in t.parents)
        return "\n".join(lines)

    @staticmethod
    def _make(op, data, parents, rule):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out.op, out.parents, out.rule = op, parents, rule
        return out

    def __add__(self, other):
        return Tensor._make("add", self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return Tensor._make("mul", a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._make("matmul", a @ b, (self, other), lambda g: (g @ b.transpose(0, 1), a.transpose(0, 1) @ g))

    def relu(self):
        x = self.data
        return Tensor._make("relu", torch.where(x > 0, x, torch.zeros_like(x)), (self,),
                            lambda g: (torch.where(x > 0, g, torch.zeros_like(g)),))

    def sum(self):
        x = self.data
        return Tensor._make("sum", x.sum(), (self,), lambda g: (torch.full_like(x, 1.0) * g,))

    def backward(self):
        order, state = [], {}
        stack = [self]
        while stack:
            t = stack[-1]
            if state.get(id(t)) is None:
                state[id(t)] = "open"
                stack.extend(p for p in t.parents if state.get(id(p)) is None)
            else:
                stack.pop()
                if state[id(t)] == "open":
                    state[id(t)] = "done"
                    order.append(t)
        pending = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = pending.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t.rule is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t.parents, t.rule(g)):
                if p.requires_grad:
                    pending[id(p)] = pending[id(p)] + pg if id(p) in pending else pg


if __name__ == "__main__":
    x = Tensor(torch.tensor([[1.0, -2.0]], dtype=torch.float64), requires_grad=True)
    w = Tensor(torch.tensor([[1.0, -1.0], [0.5, -2.0]], dtype=torch.float64), requires_grad=True)
    y = (x @ w).relu().sum()
    print(y.describe())
    y.backward()
    print(np.asarray(x.grad.tolist()), np.asarray(w.grad.tolist()))
