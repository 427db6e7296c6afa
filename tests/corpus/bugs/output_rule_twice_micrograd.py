"""micrograd-style closures; backward() walks the topological order (which starts with the
output) and then, as if the output were still to do, calls the output's own closure again.

The output's inputs get their gradient twice; by then the walk is over, so only the leaves
that feed the output directly (x in x.sum(), a and b in a @ b) show it, doubled.
"""

import torch


class Tensor:
    def __init__(self, data, requires_grad=False, _parents=()):
        self.data = data
        self.requires_grad = requires_grad or any(p.requires_grad for p in _parents)
        self.grad = None
        self._parents = _parents if self.requires_grad else ()
        self._backward = lambda: None
        self._g = None  # the gradient flowing through this node during one backward()

    def _push(self, g):
        if self.requires_grad:
            self._g = g if self._g is None else self._g + g

    def __add__(self, other):
        out = Tensor(self.data + other.data, _parents=(self, other))

        def _backward():
            self._push(out._g)
            other._push(out._g)
        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Tensor(self.data * other.data, _parents=(self, other))

        def _backward():
            self._push(out._g * other.data)
            other._push(out._g * self.data)
        out._backward = _backward
        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, _parents=(self, other))

        def _backward():
            self._push(out._g @ other.data.T)
            other._push(self.data.T @ out._g)
        out._backward = _backward
        return out

    def relu(self):
        out = Tensor(self.data.clamp(min=0), _parents=(self,))

        def _backward():
            self._push(out._g * (self.data > 0))
        out._backward = _backward
        return out

    def sum(self):
        out = Tensor(self.data.sum(), _parents=(self,))

        def _backward():
            self._push(out._g * torch.ones_like(self.data))
        out._backward = _backward
        return out

    def backward(self, grad=None):
        topo, seen = [], set()
        stack = [(self, False)]
        while stack:  # post-order without recursion
            t, done = stack.pop()
            if done:
                topo.append(t)
            elif id(t) not in seen:
                seen.add(id(t))
                stack.append((t, True))
                stack.extend((p, False) for p in t._parents)
        for t in topo:
            t._g = None
        self._g = torch.ones_like(self.data) if grad is None else grad
        for t in reversed(topo):
            t._backward()
        self._backward()  # the output's own step, once more
        for t in topo:
            if t.requires_grad and not t._parents and t._g is not None:
                t.grad = t._g.clone() if t.grad is None else t.grad + t._g
