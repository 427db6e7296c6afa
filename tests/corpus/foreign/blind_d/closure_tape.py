"""Autograd with a tape of closures.

Each op stores a closure that pushes its output's gradient into its inputs.
backward() records the closures of the graph on a tape in topological order
(an iterative DFS) and replays the tape backwards.
Core only: no broadcasting, no upstream gradient argument.
"""
import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._push = None     # closure: upstream gradient -> inputs
        self._pending = None  # gradient collected during a backward pass

    def _receive(self, g):
        if self._push is None:  # a leaf keeps its gradient
            self.grad = g.clone() if self.grad is None else self.grad + g
        elif self._pending is None:
            self._pending = g
        else:
            self._pending = self._pending + g

    @staticmethod
    def _result(data, inputs, push):
        out = Tensor(data, requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out._inputs = inputs
            out._push = push
        return out

    @staticmethod
    def _same_shape(a, b):
        if a.data.shape != b.data.shape:
            raise ValueError(f"shapes differ: {tuple(a.data.shape)} vs {tuple(b.data.shape)}")

    def __add__(self, other):
        Tensor._same_shape(self, other)
        a, b = self, other

        def push(g):
            if a.requires_grad:
                a._receive(g)
            if b.requires_grad:
                b._receive(g)
        return Tensor._result(a.data + b.data, (a, b), push)

    def __mul__(self, other):
        Tensor._same_shape(self, other)
        a, b = self, other

        def push(g):
            if a.requires_grad:
                a._receive(g * b.data)
            if b.requires_grad:
                b._receive(g * a.data)
        return Tensor._result(a.data * b.data, (a, b), push)

    def __matmul__(self, other):
        a, b = self, other

        def push(g):
            if a.requires_grad:
                a._receive(g @ b.data.T)
            if a.requires_grad:
                b._receive(a.data.T @ g)
        return Tensor._result(a.data @ b.data, (a, b), push)

    def relu(self):
        a = self

        def push(g):
            a._receive(g * (a.data > 0))
        return Tensor._result(torch.relu(a.data), (a,), push)

    def sum(self):
        a = self

        def push(g):
            a._receive(g * torch.ones_like(a.data))
        return Tensor._result(a.data.sum(), (a,), push)

    def backward(self):
        # record the tape: every node after all of its inputs
        tape, seen = [], {id(self)}
        stack = [(self, iter(self._inputs))]
        while stack:
            node, inputs = stack[-1]
            nxt = next(inputs, None)
            if nxt is None:
                stack.pop()
                tape.append(node)
            elif id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append((nxt, iter(nxt._inputs)))
        # replay it backwards
        self._receive(torch.ones_like(self.data))
        for node in reversed(tape):
            if node._push is not None and node._pending is not None:
                g, node._pending = node._pending, None
                node._push(g)
