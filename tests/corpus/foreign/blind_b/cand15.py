"""
Reverse-mode differentiation as message passing.

Every node that depends on a trainable leaf keeps an *inbox*. Going backwards in
topological order, a node sums the messages in its inbox (that sum is dL/dnode),
then sends to each input the vector-Jacobian product  J^T . (dL/dnode).
Index notation throughout; matmul and its adjoints are einsums.
"""
from functools import reduce

import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._send = None      # callable: dL/dself -> posts messages to the inputs' inboxes
        self._inbox = []

    # -------------------------------------------------------------- plumbing
    @staticmethod
    def _const(x, like):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=like.data.dtype))

    def _post(self, message):
        if self.requires_grad:
            self._inbox.append(message)

    @staticmethod
    def _new(data, inputs):
        out = Tensor(data, requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out._inputs = inputs
        return out

    # -------------------------------------------------------------- core ops
    def __add__(self, other):
        other = Tensor._const(other, self)
        out = Tensor._new(self.data + other.data, (self, other))

        def send(G):
            self._post(G)
            other._post(G)
        out._send = send
        return out

    def __mul__(self, other):
        other = Tensor._const(other, self)
        x, y = self.data, other.data
        out = Tensor._new(x * y, (self, other))

        def send(G):                       # d(x_i y_i)/dx_i = y_i
            self._post(G * y)
            other._post(G * x)
        out._send = send
        return out

    def __matmul__(self, other):
        A, B = self.data, other.data
        out = Tensor._new(torch.einsum("ik,kj->ij", A, B), (self, other))

        def send(G):                       # C_ij = A_ik B_kj
            self._post(torch.einsum("ij,kj->ik", G, B))
            other._post(torch.einsum("ik,ij->kj", A, G))
        out._send = send
        return out

    def relu(self):
        x = self.data
        out = Tensor._new(torch.where(x > 0, x, torch.zeros_like(x)), (self,))

        def send(G):                       # Heaviside step, 0 at x = 0
            self._post(G * (x > 0).to(G.dtype))
        out._send = send
        return out

    def sum(self):
        x = self.data
        out = Tensor._new(torch.einsum("ij->", x) if x.dim() == 2 else x.sum(), (self,))

        def send(G):
            self._post(G * torch.ones_like(x))
        out._send = send
        return out

    # -------------------------------------------------------------- extensions
    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __neg__(self):
        out = Tensor._new(-self.data, (self,))
        out._send = lambda G: self._post(-G)
        return out

    def __sub__(self, other):
        return self + (-Tensor._const(other, self))

    def __rsub__(self, other):
        return Tensor._const(other, self) + (-self)

    def __truediv__(self, other):
        other = Tensor._const(other, self)
        x, y = self.data, other.data
        out = Tensor._new(x / y, (self, other))

        def send(G):                       # d(x/y)/dx = 1/y,  d(x/y)/dy = -x/y^2
            self._post(G / y)
            other._post(-G * x / (y * y))
        out._send = send
        return out

    def __rtruediv__(self, other):
        return Tensor._const(other, self) / self

    def __pow__(self, p):
        x = self.data
        out = Tensor._new(x ** p, (self,))

        def send(G):                       # d(x^p)/dx = p x^(p-1)
            self._post(p * x ** (p - 1))
        out._send = send
        return out

    def exp(self):
        y = torch.exp(self.data)
        out = Tensor._new(y, (self,))
        out._send = lambda G: self._post(G * y)
        return out

    def log(self):
        x = self.data
        out = Tensor._new(torch.log(x), (self,))
        out._send = lambda G: self._post(G / x)
        return out

    def tanh(self):
        """tanh(x); derivative 1 - tanh(x)^2."""

    def sigmoid(self):
        ...

    def mean(self):
        x = self.data
        out = Tensor._new(x.mean(), (self,))
        out._send = lambda G: self._post(G * torch.ones_like(x) / x.numel())
        return out

    @property
    def T(self):
        out = Tensor._new(torch.einsum("ij->ji", self.data), (self,))
        out._send = lambda G: self._post(torch.einsum("ji->ij", G))
        return out

    def reshape(self, shape):
        old = self.data.shape
        out = Tensor._new(self.data.reshape(shape), (self,))
        out._send = lambda G: self._post(G.reshape(old))
        return out

    # -------------------------------------------------------------- backward
    def _topological(self):
        order, seen = [], set()
        stack = [(self, iter(self._inputs))]
        seen.add(id(self))
        while stack:
            node, inputs = stack[-1]
            for t in inputs:
                if t.requires_grad and id(t) not in seen:
                    seen.add(id(t))
                    stack.append((t, iter(t._inputs)))
                    break
            else:
                stack.pop()
                order.append(node)
        return order

    def backward(self, grad=None):
        self._inbox = [torch.ones_like(self.data) if grad is None else grad]
        for node in reversed(self._topological()):
            if not node._inbox:
                continue
            total = reduce(torch.add, node._inbox)
            node._inbox = []
            if node._send is None:                       # a leaf
                node.grad = total.clone() if node.grad is None else node.grad + total
            else:
                node._send(total)
