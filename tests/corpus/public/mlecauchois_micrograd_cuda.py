# Adapted from https://github.com/mlecauchois/micrograd-cuda, micrograd_cuda/tensor.py
# (commit 0bd54520050ba05bd9d85f35a20b768363580240), test data for the grader's corpus.
#
# What changed for the contract: the nested-list / CUDA-pointer storage and the kernels
# of micrograd_cuda/operations.py (matrix_add, matrix_mul, element_wise_mul, power,
# power_prime, tanh, tanh_prime, summation, ...) are replaced by the torch ops they
# compute, on CPU only (`device`, `to`, `concat`, `abs`, `__del__` are left out);
# `.grad` is a plain torch tensor that is None until backward (the original allocates a
# zero Tensor at construction for every tensor that requires grad: here backward
# allocates it for every node of the graph that requires grad); `requires_grad`
# defaults to False as the contract says (the original defaults to True, so the
# constants the original creates inside ops are created with requires_grad=True here
# to keep its behaviour); `sum` returns a 0-d result (the original: shape (1, 1));
# `backward(grad=None)`. The engine has no relu: it stays "not attempted".
# Kept as in the original: a result's requires_grad is the left operand's only, `.T`
# records its input but sets no `_backward`, the recursive build_topo.
#
# Original licence:
#
# The MIT License (MIT) Copyright (c) 2024 Matthieu Le Cauchois
#
# Permission is hereby granted, free of charge, to any person obtaining a copy of this
# software and associated documentation files (the "Software"), to deal in the Software
# without restriction, including without limitation the rights to use, copy, modify,
# merge, publish, distribute, sublicense, and/or sell copies of the Software, and to
# permit persons to whom the Software is furnished to do so, subject to the following
# conditions:
#
# The above copyright notice and this permission notice shall be included in all copies
# or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,
# INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A
# PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT
# HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF
# CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE
# OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

import torch


class Tensor:

    def __init__(self, data, requires_grad=False, _children=(), _op="", label=""):
        self.data = data
        self._requires_grad = requires_grad
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op
        self.label = label
        self.shape = tuple(data.shape)
        self.grad = None

    def __repr__(self):
        return f"Tensor(data={self.data})"

    def _const(self, other):
        return other if isinstance(other, Tensor) else Tensor(torch.full_like(self.data, other), requires_grad=True)

    def __matmul__(self, other):
        other = self._const(other)
        out = Tensor(self.data @ other.data, _children=(self, other), _op="@", requires_grad=self.requires_grad)

        def _backward():
            self.grad = self.grad + out.grad @ other.data.T
            other.grad = other.grad + self.data.T @ out.grad
        out._backward = _backward
        return out

    def __rmatmul__(self, other):
        return self @ other

    def __mul__(self, other):
        other = self._const(other)
        out = Tensor(self.data * other.data, _children=(self, other), _op="*", requires_grad=self.requires_grad)

        def _backward():
            self.grad = self.grad + out.grad * other.data
            other.grad = other.grad + self.data * out.grad

        out._backward = _backward
        return out

    def __rmul__(self, other):
        return self * other

    def __add__(self, other):
        other = self._const(other)
        out = Tensor(self.data + other.data, _children=(self, other), _op="+", requires_grad=self.requires_grad)

        def _backward():
            self.grad = self.grad + out.grad
            other.grad = other.grad + out.grad

        out._backward = _backward

        return out

    def __radd__(self, other):
        return self + other

    def __neg__(self):
        neg_one = Tensor(-1 * torch.ones_like(self.data), requires_grad=True)
        return self * neg_one

    def __sub__(self, other):
        other = self._const(other)
        return self + (-other)

    def __pow__(self, exponent):
        out = Tensor(self.data ** exponent, _children=(self,), _op=f"**{exponent}", requires_grad=self.requires_grad)

        def _backward():
            self.grad = self.grad + exponent * self.data ** (exponent - 1) * out.grad

        out._backward = _backward

        return out

    def __truediv__(self, other):  # self / other
        return self * other**-1

    @property
    def T(self):
        return Tensor(self.data.T, _children=(self,), _op="transpose", requires_grad=self.requires_grad)

    def tanh(self):
        out = Tensor(torch.tanh(self.data), _children=(self,), _op="tanh", requires_grad=self.requires_grad)

        def _backward():
            self.grad = self.grad + (1 - torch.tanh(self.data) ** 2) * out.grad

        out._backward = _backward
        return out

    def sum(self):
        out = Tensor(self.data.sum(), _children=(self,), _op="sum", requires_grad=self.requires_grad)

        def _backward():
            grad_scalar = out.grad
            grad_contribution = grad_scalar * torch.ones_like(self.data)
            self.grad = self.grad + grad_contribution

        out._backward = _backward
        return out

    def backward(self, grad=None):

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
            if v.requires_grad and v.grad is None:
                v.grad = torch.zeros_like(v.data)
        self.grad = torch.ones_like(self.data) if grad is None else grad
        for node in reversed(topo):
            node._backward()

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        # If requires_grad is set to False, we should also delete the grad tensor to cleanup
        if value == False:
            self.grad = None
        self._requires_grad = value
