import torch


class Tensor:
    """stores a torch tensor and its gradient (like micrograd's Value but for tensors)"""

    def __init__(self, data, requires_grad=False, _children=(), _op=''):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        # internal variables used for autograd graph construction
        self._backward = lambda: None
        self._prev = _children
        self._op = _op  # the op that produced this node, for debugging

    def __repr__(self):
        return f"Tensor(data={self.data}, grad={self.grad})"

    def _accumulate(self, g):
        if not self.requires_grad:
            return
        if self.grad is None:
            self.grad = g.clone()
        else:
            self.grad = self.grad + g

    def __add__(self, other):
        out = Tensor(self.data + other.data, self.requires_grad or other.requires_grad, (self, other), '+')

        def _backward():
            self._accumulate(out.grad)
            other._accumulate(out.grad)
        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Tensor(self.data * other.data, self.requires_grad or other.requires_grad, (self, other), '*')

        def _backward():
            self._accumulate(other.data * out.grad)
            other._accumulate(self.data * out.grad)
        out._backward = _backward
        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, self.requires_grad or other.requires_grad, (self, other), '@')

        def _backward():
            # (n,m) @ (m,p): dA = dOut @ B^T, dB = A^T @ dOut
            self._accumulate(out.grad @ other.data.T)
            other._accumulate(self.data.T @ out.grad)
        out._backward = _backward
        return out

    def relu(self):
        # TODO
        raise NotImplementedError

    def sum(self):
        out = Tensor(self.data.sum(), self.requires_grad, (self,), 'sum')

        def _backward():
            self._accumulate(out.grad * torch.ones_like(self.data))
        out._backward = _backward
        return out

    def backward(self):
        # go through the graph starting at the output and call _backward on every node
        # (iterative instead of recursive so it doesn't blow the stack)
        self.grad = torch.ones_like(self.data)
        visited = {self}
        stack = [self]
        while stack:
            node = stack.pop()
            if node.grad is not None:
                node._backward()
            for child in node._prev:
                if child not in visited:
                    visited.add(child)
                    stack.append(child)
