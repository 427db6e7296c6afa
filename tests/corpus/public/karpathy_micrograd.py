# Adapted from https://github.com/karpathy/micrograd, micrograd/engine.py
# (commit c911406e5ace8742e5841a7e0df113ecb5d54685), test data for the grader's corpus.
#
# What changed for the contract: `Value` is `Tensor` over torch tensors; a
# `requires_grad` flag (a result requires grad iff a child does); `.grad` starts as
# None and is zero-filled at backward time (micrograd starts it at 0), and tensors that
# do not require grad get None back; `backward(grad=None)` seeds ones_like instead of
# 1; `__matmul__` and `sum` are added in micrograd's own closure style (the scalar
# original has neither); a plain number operand becomes a constant tensor of the other
# operand's shape; the Value-exponent branch of `__pow__` is dropped.
# Everything else (closures, recursive build_topo without a raised recursion limit,
# no broadcasting, the graph kept alive by the closures) is micrograd's own.
#
# Original licence:
#
# The MIT License (MIT) Copyright (c) 2020 Andrej Karpathy
# 
# Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files (the "Software"), to deal in the Software without restriction, including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is furnished to do so, subject to the following conditions:
# 
# The above copyright notice and this permission notice shall be included in all copies or substantial portions of the Software.
# 
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

import torch


class Tensor:
    """ stores a tensor value and its gradient """

    def __init__(self, data, requires_grad=False, _children=(), _op=''):
        self.data = data
        self.requires_grad = requires_grad or any(c.requires_grad for c in _children)
        self.grad = None
        # internal variables used for autograd graph construction
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op # the op that produced this node, for graphviz / debugging / etc

    def _wrap(self, other):
        # micrograd's Value(other) for a plain number: here a constant of this tensor's shape
        return other if isinstance(other, Tensor) else Tensor(torch.full_like(self.data, other))

    def __add__(self, other):
        other = self._wrap(other)
        out = Tensor(self.data + other.data, _children=(self, other), _op='+')

        def _backward():
            self.grad += out.grad
            other.grad += out.grad
        out._backward = _backward

        return out

    def __mul__(self, other):
        other = self._wrap(other)
        out = Tensor(self.data * other.data, _children=(self, other), _op='*')

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out._backward = _backward

        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data, _children=(self, other), _op='@')

        def _backward():
            self.grad += out.grad @ other.data.T
            other.grad += self.data.T @ out.grad
        out._backward = _backward

        return out

    def sum(self):
        out = Tensor(self.data.sum(), _children=(self,), _op='sum')

        def _backward():
            self.grad += out.grad
        out._backward = _backward

        return out

    def __pow__(self, other):
        assert isinstance(other, (int, float)), "only supporting int/float powers for now"
        out = Tensor(self.data**other, _children=(self,), _op=f'**{other}')

        def _backward():
            self.grad += (other * self.data**(other-1)) * out.grad
        out._backward = _backward

        return out

    def relu(self):
        out = Tensor(torch.where(self.data < 0, torch.zeros_like(self.data), self.data), _children=(self,), _op='ReLU')

        def _backward():
            self.grad += (out.data > 0) * out.grad
        out._backward = _backward

        return out

    def backward(self, grad=None):

        # topological order all of the children in the graph
        topo = []
        visited = set()
        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)
        build_topo(self)

        for v in topo:
            if v.grad is None:
                v.grad = torch.zeros_like(v.data)

        # go one variable at a time and apply the chain rule to get its gradient
        self.grad = torch.ones_like(self.data) if grad is None else grad
        for v in reversed(topo):
            v._backward()

        for v in topo:
            if not v.requires_grad:
                v.grad = None

    def __neg__(self): # -self
        return self * -1

    def __radd__(self, other): # other + self
        return self + other

    def __sub__(self, other): # self - other
        return self + (-other)

    def __rsub__(self, other): # other - self
        return other + (-self)

    def __rmul__(self, other): # other * self
        return self * other

    def __truediv__(self, other): # self / other
        return self * other**-1

    def __rtruediv__(self, other): # other / self
        return other * self**-1

    def __repr__(self):
        return f"Tensor(data={self.data}, grad={self.grad})"
