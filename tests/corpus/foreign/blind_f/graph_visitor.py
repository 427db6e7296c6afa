"""
Autograd with an explicit graph and visitors.

Tensors only hold values.  What produced a tensor is an ``OpNode`` (op name,
input tensors, saved values).  ``Graph.of(output)`` collects the nodes reachable
from an output in topological order; visitors walk a Graph:

* ``GradVisitor`` -- the backward pass, one ``visit_<op>`` per op;
* ``Releaser``    -- drops the inputs/saved values once backward is done.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import torch


class OpNode:
    def __init__(self, op: str, inputs: tuple, saved: tuple = ()):
        self.op = op
        self.inputs = inputs
        self.saved = saved


class Graph:
    def __init__(self, output: "Tensor", order: List["Tensor"]):
        self.output = output
        self.order = order          # inputs before the tensors computed from them

    @classmethod
    def of(cls, output: "Tensor") -> "Graph":
        order: List[Tensor] = []
        state: Dict[int, int] = {}  # 1 = on the stack, 2 = finished
        stack = [output]
        while stack:
            t = stack[-1]
            if state.get(id(t)) == 2:
                stack.pop()
                continue
            state[id(t)] = 1
            waiting = [] if t.node is None else [
                i for i in t.node.inputs if i.requires_grad and state.get(id(i)) != 2
            ]
            if waiting:
                stack.extend(waiting)
            else:
                state[id(t)] = 2
                order.append(t)
                stack.pop()
        return cls(output, order)


class GradVisitor:
    def __init__(self):
        self.table = {
            "add": self.visit_add,
            "mul": self.visit_mul,
            "matmul": self.visit_matmul,
            "relu": self.visit_relu,
            "sum": self.visit_sum,
            "mean": self.visit_mean,
            "reshape": self.visit_reshape,
        }

    def run(self, graph: Graph, seed: torch.Tensor) -> None:
        grads: Dict[int, torch.Tensor] = {id(graph.output): seed}
        for t in reversed(graph.order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.node is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for inp, gi in zip(t.node.inputs, self.table[t.node.op](t.node, g)):
                if inp.requires_grad:
                    grads[id(inp)] = grads[id(inp)] + gi if id(inp) in grads else gi

    def visit_add(self, node, g):
        return g, g

    def visit_mul(self, node, g):
        a, b = node.saved
        return g * b, g * a

    def visit_matmul(self, node, g):
        a, b = node.saved
        return g @ b.T, a.T @ g

    def visit_relu(self, node, g):
        (mask,) = node.saved
        return (g * mask,)

    def visit_sum(self, node, g):
        (shape,) = node.saved
        return (g.expand(shape).clone(),)

    def visit_mean(self, node, g):
        (shape,) = node.saved
        n = 1
        for s in shape:
            n *= s
        return ((g / n).expand(shape).clone(),)

    def visit_reshape(self, node, g):
        (shape,) = node.saved
        return (g.reshape(shape),)


class Releaser:
    """Cuts a finished graph apart so the intermediates can be freed."""

    def visit(self, t: "Tensor") -> None:
        node = t.node
        if node is None:
            return
        t.node = None
        for inp in node.inputs:
            self.visit(inp)
        node.inputs, node.saved = (), ()


class Tensor:
    def __init__(self, data: torch.Tensor, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad: Optional[torch.Tensor] = None
        self.node: Optional[OpNode] = None

    @staticmethod
    def _from(value, op, inputs, saved=()):
        out = Tensor(value)
        if any(i.requires_grad for i in inputs):
            out.requires_grad = True
            out.node = OpNode(op, inputs, saved)
        return out

    def __add__(self, other):
        return Tensor._from(self.data + other.data, "add", (self, other))

    def __mul__(self, other):
        return Tensor._from(self.data * other.data, "mul", (self, other), (self.data, other.data))

    def __matmul__(self, other):
        return Tensor._from(self.data @ other.data, "matmul", (self, other), (self.data, other.data))

    def relu(self):
        mask = self.data > 0
        return Tensor._from(self.data * mask, "relu", (self,), (mask,))

    def sum(self):
        return Tensor._from(self.data.sum(), "sum", (self,), (self.data.shape,))

    def mean(self):
        return Tensor._from(self.data.mean(), "mean", (self,), (self.data.shape,))

    def reshape(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        return Tensor._from(self.data.reshape(shape), "reshape", (self,), (self.data.shape,))

    def backward(self, grad: Optional[torch.Tensor] = None) -> None:
        if grad is None:
            grad = torch.ones_like(self.data)
        graph = Graph.of(self)
        GradVisitor().run(graph, grad)
        Releaser().visit(self)
