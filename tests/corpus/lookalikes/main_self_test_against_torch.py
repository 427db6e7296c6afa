"""A correct core engine with a self-test that compares it against torch's autograd.

The self-test (and the helper it calls) runs only when the file is executed
directly; importing the engine never reaches torch.autograd.
"""

import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._prev = ()
        self._backward = lambda: None

    def __add__(self, other):
        out = Tensor(self.data + other.data, self.requires_grad or other.requires_grad)
        if out.requires_grad:
            out._prev = (self, other)

            def _backward():
                self._accumulate(out.grad)
                other._accumulate(out.grad)

            out._backward = _backward
        return out

    def __mul__(self, other):
        out = Tensor(self.data * other.data, self.requires_grad or other.requires_grad)
        if out.requires_grad:
            out._prev = (self, other)

            def _backward():
                self._accumulate(out.grad * other.data)
                other._accumulate(out.grad * self.data)

            out._backward = _backward
        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, self.requires_grad or other.requires_grad)
        if out.requires_grad:
            out._prev = (self, other)

            def _backward():
                self._accumulate(out.grad @ other.data.T)
                other._accumulate(self.data.T @ out.grad)

            out._backward = _backward
        return out

    def relu(self):
        out = Tensor(self.data.clamp(min=0), self.requires_grad)
        if out.requires_grad:
            out._prev = (self,)
            out._backward = lambda: self._accumulate(out.grad * (self.data > 0))
        return out

    def sum(self):
        out = Tensor(self.data.sum(), self.requires_grad)
        if out.requires_grad:
            out._prev = (self,)
            out._backward = lambda: self._accumulate(out.grad * torch.ones_like(self.data))
        return out

    def _accumulate(self, g):
        if self.requires_grad:
            self.grad = g.clone() if self.grad is None else self.grad + g

    def backward(self):
        topo, visited, stack = [], {id(self)}, [(self, 0)]
        while stack:
            node, i = stack.pop()
            if i < len(node._prev):
                stack.append((node, i + 1))
                child = node._prev[i]
                if id(child) not in visited:
                    visited.add(id(child))
                    stack.append((child, 0))
            else:
                topo.append(node)
        leaves = [t for t in topo if not t._prev]
        saved = {id(t): t.grad for t in leaves}
        for t in topo:
            t.grad = None
        self.grad = torch.ones_like(self.data)
        for node in reversed(topo):
            if node._prev and node.grad is not None:
                node._backward()
        for t in topo:
            if t._prev:
                t.grad = None
            elif saved[id(t)] is not None:
                t.grad = saved[id(t)] + t.grad if t.grad is not None else saved[id(t)]


def _compare_with_torch():
    """Grads of a small graph, from this engine and from torch's autograd."""
    x0 = torch.tensor([[1.0, -2.0], [3.0, 0.5]], dtype=torch.float64)
    x = Tensor(x0, requires_grad=True)
    ((x @ x) * x + x).relu().sum().backward()
    ref = x0.clone().requires_grad_()
    ((ref @ ref) * ref + ref).relu().sum().backward()
    return x.grad, ref.grad


if __name__ == "__main__":
    mine, theirs = _compare_with_torch()
    assert torch.allclose(mine, theirs), (mine, theirs)
    print("matches torch.autograd:", torch.autograd.grad is not None)
