# Adapted from https://github.com/arman-hk/microgradplus, microgradplus/engine.py
# (commit baf54a7d67c37a15df5de55b507eee4e47e71ee3), test data for the grader's corpus.
#
# What changed for the contract: `Value` is `Tensor(data, requires_grad=False)`; numpy
# arrays are torch tensors (np.array(data) -> torch.as_tensor(data), np.zeros_like(...,
# dtype=float) -> torch.zeros_like(..., dtype=torch.float64), np.sum(x, axis=0) ->
# x.sum(dim=0), np.transpose/np.maximum/np.tanh/np.exp/np.log/np.sqrt/np.sign/np.size/
# np.mean/np.any -> the matching torch calls); the constructor takes `requires_grad`
# (stored; a result requires grad iff a child does; the engine itself never reads it), so
# the internal calls pass `_children=` and `_grad_fn=` by keyword; `T` stays a property as
# in the original. Nothing else: the original has no `sum` (only `mean`), no reflected
# operators, no no_grad, and those stay absent.
# Kept as in the original: `.grad` is a zero tensor from construction on, for every tensor
# (there is no requires_grad logic); `__add__` gives `other` the gradient summed over axis
# 0; backward recurses into every child after calling `_grad_fn`, with no topological
# order and no visited set; `T` builds a result with no children and no backward;
# `__pow__` also writes a gradient into its (constant) exponent.
# Note: with numpy, `np.sum(g, axis=0)` of a 0-d gradient raises; torch's `g.sum(dim=0)`
# accepts a 0-d tensor, so adding two 0-d tensors does not raise here.
#
# Original licence:
#
# MIT License
#
# Copyright (c) 2023 Arman
#
# Permission is hereby granted, free of charge, to any person obtaining a copy
# of this software and associated documentation files (the "Software"), to deal
# in the Software without restriction, including without limitation the rights
# to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
# copies of the Software, and to permit persons to whom the Software is
# furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all
# copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
# IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
# AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
# OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
# SOFTWARE.

import torch


class Context:
    """Stores given arrays for a future call to Value.backward"""

    def __init__(self):
        self.saved_arrays = {}

    def save_for_backward(self, *keys):
        for idx, key in enumerate(keys):
            self.saved_arrays[idx] = key


class Tensor:
    """A node in the computation graph"""

    def __init__(self, data, requires_grad=False, _children=(), _grad_fn=None):
        self.data = torch.as_tensor(data)
        self.grad = torch.zeros_like(self.data, dtype=torch.float64)
        self.requires_grad = bool(requires_grad) or any(c.requires_grad for c in _children)
        # internal variables
        self._prev = set(_children)
        self._grad_fn = _grad_fn

    def __add__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        ctx = Context()
        ctx.save_for_backward(self.data, other.data)

        def _grad_fn(grad):
            self_data, other_data = ctx.saved_arrays.values()
            self.grad += grad
            other.grad += torch.sum(grad, dim=0)
        out = Tensor(self.data + other.data, _children=(self, other), _grad_fn=_grad_fn)
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        ctx = Context()
        ctx.save_for_backward(self.data, other.data)

        def _grad_fn(grad):
            self_data, other_data = ctx.saved_arrays.values()
            self.grad += other_data * grad
            other.grad += self_data * grad
        out = Tensor(self.data * other.data, _children=(self, other), _grad_fn=_grad_fn)
        return out

    def __pow__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        ctx = Context()
        ctx.save_for_backward(self.data, other.data)

        def _grad_fn(grad):
            self_data, other_data = ctx.saved_arrays.values()
            self.grad += (other_data * self_data ** (other_data - 1)) * grad
            if torch.any(self_data > 0):
                other.grad += torch.sum((self.data ** other_data * torch.log(self_data)) * grad)
            else:
                other.grad += 0
        out = Tensor(self.data ** other.data, _children=(self, other), _grad_fn=_grad_fn)
        return out

    def __neg__(self):
        def _grad_fn(grad):
            self.grad -= grad
        out = Tensor(-self.data, _children=(self,), _grad_fn=_grad_fn)
        return out

    def __sub__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)

        def _grad_fn(grad):
            self.grad += grad
            other.grad -= grad
        out = Tensor(self.data - other.data, _children=(self, other), _grad_fn=_grad_fn)
        return out

    def __truediv__(self, other):
        other = other if isinstance(other, Tensor) else Tensor(other)
        ctx = Context()
        ctx.save_for_backward(self.data, other.data)

        def _grad_fn(grad):
            self_data, other_data = ctx.saved_arrays.values()
            self.grad += grad / other_data
            other.grad += -self_data / (other_data ** 2) * grad
        out = Tensor(self.data / other.data, _children=(self, other), _grad_fn=_grad_fn)
        return out

    def sqrt(self):
        def _grad_fn(grad):
            self.grad += grad / (2 * torch.sqrt(self.data))
        out = Tensor(torch.sqrt(self.data), _children=(self,), _grad_fn=_grad_fn)
        return out

    def exp(self):
        def _grad_fn(grad):
            self.grad += torch.exp(self.data) * grad
        out = Tensor(torch.exp(self.data), _children=(self,), _grad_fn=_grad_fn)
        return out

    def log(self):
        def _grad_fn(grad):
            self.grad += grad / self.data
        out = Tensor(torch.log(self.data), _children=(self,), _grad_fn=_grad_fn)
        return out

    def abs(self):
        def _grad_fn(grad):
            self.grad += torch.sign(self.data) * grad
        out = Tensor(torch.abs(self.data), _children=(self,), _grad_fn=_grad_fn)
        return out

    def __matmul__(self, other):
        if isinstance(other, (int, float)):
            other = Tensor(other)

        def _grad_fn(grad):
            self.grad += grad @ other.data.T
            other.grad += self.data.T @ grad

        out = Tensor(self.data @ other.data, _children=(self, other), _grad_fn=_grad_fn)
        return out

    def __rmatmul__(self, other):
        if isinstance(other, (int, float)):
            other = Tensor(other)

        return other @ self

    @property
    def T(self):
        return Tensor(self.data.permute(*reversed(range(self.data.dim()))))

    def relu(self):
        def _grad_fn(grad):
            self.grad += (self.data > 0) * grad
        out = Tensor(torch.clamp(self.data, min=0), _children=(self,), _grad_fn=_grad_fn)
        return out

    def tanh(self):
        def _grad_fn(grad):
            self.grad += (1 - (torch.tanh(self.data))**2) * grad
        out = Tensor(torch.tanh(self.data), _children=(self, ), _grad_fn=_grad_fn)
        return out

    def sigmoid(self):
        def S(x):
            return 1/(1 + torch.exp(-x))

        def _grad_fn(grad):
            self.grad += (S(self.data) * (1 - S(self.data))) * grad
        out = Tensor(S(self.data), _children=(self,), _grad_fn=_grad_fn)
        return out

    def mean(self):
        def _grad_fn(grad):
            self.grad += grad / self.data.numel()
        out = Tensor(torch.mean(self.data), _children=(self,), _grad_fn=_grad_fn)
        return out

    def backward(self, grad=None):
        if grad is None: grad = torch.ones_like(self.data, dtype=torch.float64)
        self.grad = grad
        if self._grad_fn is not None: self._grad_fn(grad)
        # topo
        for child in self._prev:
            child.backward(child.grad)

    def __repr__(self):
        return f"Tensor(data={self.data}, grad={self.grad})"
