"""A candidate's file halfway through the interview: relu still a stub, a matmul rule with the
transpose on the wrong side, and a backward that runs each node as soon as it is discovered."""

import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._backward = lambda: None

    def _result(self, data, parents):
        out = Tensor(data, any(p.requires_grad for p in parents))
        out._parents = parents
        return out

    def _add_grad(self, g):
        if self.requires_grad:
            self.grad = g if self.grad is None else self.grad + g

    def __add__(self, other):
        out = self._result(self.data + other.data, (self, other))

        def backward():
            self._add_grad(out.grad)
            other._add_grad(out.grad)
        out._backward = backward
        return out

    def __mul__(self, other):
        out = self._result(self.data * other.data, (self, other))

        def backward():
            self._add_grad(out.grad * other.data)
            other._add_grad(out.grad * self.data)
        out._backward = backward
        return out

    def __matmul__(self, other):
        out = self._result(self.data @ other.data, (self, other))

        def backward():
            self._add_grad(other.data @ out.grad)
            other._add_grad(self.data.T @ out.grad)
        out._backward = backward
        return out

    def relu(self):
        raise NotImplementedError("relu")

    def sum(self):
        out = self._result(self.data.sum(), (self,))

        def backward():
            self._add_grad(out.grad.expand(self.data.shape))
        out._backward = backward
        return out

    def backward(self):
        self.grad = torch.ones_like(self.data)
        stack, seen = [self], set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            node._backward()
            stack.extend(node._parents)
