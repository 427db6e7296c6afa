# Adapted from https://github.com/evintunador/autograd_engine_tutorial, minigrad/engine.py
# (commit f618ba62ce4fbf4288a0e74f2a65eaef7b936f2a), test data for the grader's corpus.
#
# What changed for the contract: numpy arrays are torch tensors (np.sum(x, axis=d,
# keepdims=k) -> x.sum(dim=d, keepdim=k), np.broadcast_to -> Tensor.broadcast_to,
# np.matmul/np.swapaxes -> torch.matmul/swapaxes, np.maximum(0, x) -> torch.clamp(x,
# min=0), np.clip -> torch.clamp, np.transpose(x, axes) -> x.permute(axes),
# np.expand_dims/ np.squeeze -> unsqueeze/squeeze, np.add.at -> an
# index_put_(accumulate=True) helper, float32 for ints and lists as in the original; a
# float64 torch tensor stays float64 as a float64 ndarray did); `T` is a property calling
# the original `transpose()` (which swaps the last two axes); `backward(grad=None)` seeds
# the output with `grad` when it is given (the original always seeds ones). Trimmed to
# what the contract reaches: `max`, `min`, `softmax`, `var`, `sd`, `squeeze`,
# `broadcast_to`, `masked_fill` and the `__main__` demo are left out; `unsqueeze`, which
# `+`, `*`, `/` use, is kept.
# Kept as in the original: `sum(dim=-1, keepdim=False)` and `mean(dim=-1, ...)` reduce the
# last axis by default, and sum's backward broadcasts the reduced gradient with
# `broadcast_to(out.grad, self.shape)`, without re-inserting the reduced axis; only the
# right operand of `+`, `*`, `/` may be broadcast; `/` adds an epsilon to the divisor in
# the forward pass; `log` clips its input; no reflected `*` (`__rmul__`), and
# `__rtruediv__` wraps the number as a shape-(1,) float32 tensor; recursive build_topo.
#
# Original licence:
#
# MIT License
#
# Copyright (c) 2024 Evin Tunador
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

from typing import Tuple, Union


def _add_at(a, idx, b):
    """np.add.at(a, idx, b) for torch: accumulate b into a[idx], repeated indices add up."""
    if isinstance(idx, torch.Tensor):
        a.index_put_((idx,), b, accumulate=True)
    elif isinstance(idx, tuple) and all(isinstance(i, torch.Tensor) for i in idx):
        a.index_put_(idx, b, accumulate=True)
    else:
        a[idx] += b


class Tensor:
    '''Stores a tensor and its gradient information'''
    def __init__(self,
                 data: Union[float, int, list, torch.Tensor],
                 requires_grad: bool = False,
                 _children: Tuple[Union['Tensor', 'Parameter'], ...] = ()):
        if isinstance(data, (int, float)):
            data = torch.tensor([data], dtype=torch.float32)
        elif isinstance(data, list):
            data = torch.tensor(data, dtype=torch.float32)
        elif isinstance(data, torch.Tensor):
            # ensure float type for consistency
            if not data.is_floating_point():
                data = data.to(torch.float32)
        else:
            raise ValueError(f'Invalid data type {type(data)} for Tensor.')

        self.data = data

        # Store tensor metadata
        self.shape = self.data.shape
        self.ndim = self.data.ndim
        self.dtype = self.data.dtype

        # Gradient-related attributes
        self.requires_grad = requires_grad
        self.grad = torch.zeros_like(data) if requires_grad else None

        # Autograd graph information
        self._prev = set(_children)
        self._backward = lambda: None  # function to compute local gradient updates

    def __repr__(self):
        #if isinstance(self.data, Tensor): # numpy prints "Tensor:\n..." by default and this supresses that
            #return f"Tensor:\n({self.data.data})\nGrad:\n({self.grad.data})"
        return f"Tensor:\n({self.data})\nGrad:\n({self.grad})"

    def __add__(self, other): # entry-wise addition
        """very limited support for different tensor shapes"""

        # Ensure other is a Tensor; also takes advantage of __init__'s type assertions
        other = other if isinstance(other, Tensor) else Tensor(other, requires_grad=False)

        # do i need this? if yes then it'll require we use .unsqueeze() before inputting here
        if (other.ndim == 1 and other.shape[0] == 1) or other.shape[-other.ndim:] == self.shape[-other.ndim:]:
            while other.ndim < self.ndim:
                other = other.unsqueeze(0)
        assert self.ndim == other.ndim, f'tensor ndim mismatch x1: {self.shape} x2: {other.shape}'

        # calc forward pass
        other_data = other.data if self.shape == other.shape else other.data.broadcast_to(self.shape)
        out = Tensor(self.data + other_data,
                     requires_grad = (self.requires_grad or other.requires_grad),
                     _children = (self, other))

        def _backward():
            if self.requires_grad:
                self.grad += out.grad

            if other.requires_grad:
                if other.shape == self.shape:
                    other.grad += out.grad
                else:
                    # identify broadcasted dimensions
                    axes = tuple(i for i, (other_dim, out_dim) in enumerate(zip(other.shape, out.shape)) if other_dim != out_dim)
                    # sum over broadcasted dimensions since gradient must be reduced back to self's shape
                    other.grad += out.grad.sum(dim=axes).reshape(other.shape)
        out._backward = _backward

        return out

    def __radd__(self, other):
        # so that int + Value redirects to Value + int aka __add__. r stands for reverse
        return self + other

    def __neg__(self):
        out = Tensor(self.data * -1, self.requires_grad, (self,))
        def _backward():
            if self.requires_grad:
                self.grad += -1 * out.grad
        out._backward = _backward
        return out

    def __sub__(self, other):
        # so instead of writing its own we can just take advantage of __add__ and __neg__
        return self + (-other)

    def __rsub__(self, other):
        return other + (-self)

    def __mul__(self, other): # entry-wise multiplication
        # Ensure other is a Tensor; also takes advantage of __init__'s type assertions
        other = other if isinstance(other, Tensor) else Tensor(other, requires_grad=False)

        # do i need this? if yes then it'll require we use .unsqueeze() before inputting here
        if (other.ndim == 1 and other.shape[0] == 1) or other.shape[-other.ndim:] == self.shape[-other.ndim:]:
            while other.ndim < self.ndim:
                other = other.unsqueeze(0)
        assert self.ndim == other.ndim, f'tensor ndim mismatch x1: {self.shape} x2: {other.shape}'

        # calc forward pass
        other_data = other.data if self.shape == other.shape else other.data.broadcast_to(self.shape)
        out = Tensor(self.data * other_data,
                     requires_grad = (self.requires_grad or other.requires_grad),
                     _children = (self, other))

        def _backward():
            if self.requires_grad:
                self.grad += out.grad * other.data

            if other.requires_grad:
                if other.shape == self.shape:
                    other.grad += out.grad * self.data
                else:
                    # identify broadcasted dimensions
                    axes = tuple(i for i, (other_dim, out_dim) in enumerate(zip(other.shape, out.shape)) if other_dim != out_dim)
                    # sum over broadcasted dimensions since gradient must be reduced back to self's shape
                    other.grad += (out.grad * self.data).sum(dim=axes).reshape(other.shape)
        out._backward = _backward

        return out

    def __truediv__(self, other): # entry-wise division
        # Ensure other is a Tensor; also takes advantage of __init__'s type assertions
        other = other if isinstance(other, Tensor) else Tensor(other, requires_grad=False)

        # do i need this? if yes then it'll require we use .unsqueeze() before inputting here
        if (other.ndim == 1 and other.shape[0] == 1) or other.shape[-other.ndim:] == self.shape[-other.ndim:]:
            while other.ndim < self.ndim:
                other = other.unsqueeze(0)
        assert self.ndim == other.ndim, f'tensor ndim mismatch x1: {self.shape} x2: {other.shape}'

        # calc forward pass
        eps = 1e-7 if self.data.dtype == torch.float32 else 1e-16  # Adjust epsilon based on precision
        other_data = other.data + eps # for stability; wouldn't want to divide by 0
        other_data = other_data if self.shape == other.shape else other_data.broadcast_to(self.shape)
        out = Tensor(self.data / other_data,
                     requires_grad = (self.requires_grad or other.requires_grad),
                     _children = (self, other))

        def _backward():
            if self.requires_grad:
                self.grad += out.grad / other.data

            if other.requires_grad:
                if other.shape == self.shape:
                    other.grad += out.grad * (-self.data / (other_data ** 2))
                else:
                    # identify broadcasted dimensions
                    axes = tuple(i for i, (other_dim, out_dim) in enumerate(zip(other.shape, out.shape)) if other_dim != out_dim)
                    # sum over broadcasted dimensions since gradient must be reduced back to self's shape
                    other.grad += (out.grad * (-self.data / (other_data ** 2))).sum(dim=axes).reshape(other.shape)
        out._backward = _backward

        return out

    def __rtruediv__(self, other):
        return Tensor(other) / self

    def __matmul__(self, other):
        """
        For tensors A and B, this uses np.matmul(A.data, B.data) which automatically
        broadcasts across the leading dimensions if they are compatible. The shape
        of the result is the broadcasted shape of A and B (across all but the last
        two dimensions), and then the final two dimensions are (m, p) where
        A is (..., m, n) and B is (..., n, p).
        """
        other = other if isinstance(other, Tensor) else Tensor(other, requires_grad=False)

        # `A @ B -> out` which has shape (...,m,n) @ (...,n,p) -> (...,m,p)
        out = Tensor(torch.matmul(self.data, other.data),
                     requires_grad=(self.requires_grad or other.requires_grad),
                     _children=(self, other))

        def _backward():
            if self.requires_grad:
                # dL/dA = dL/dOut @ B^T which has shape (...,m,p) @ (...,p,n) -> (...,m,n)
                grad_A = torch.matmul(out.grad, other.data.swapaxes(-1, -2))

                # If shapes have been broadcast, we reduce the extra axes by summation
                while grad_A.ndim > self.grad.ndim:
                    grad_A = grad_A.sum(dim=0)
                for i in range(grad_A.ndim):
                    if grad_A.shape[i] != self.grad.shape[i]:
                        grad_A = grad_A.sum(dim=i, keepdim=True)

                self.grad += grad_A

            if other.requires_grad:
                # dL/dB = A^T @ dL/dOut which has shape (...,n,m) @ (...,m,p) -> (...,n,p)
                grad_B = torch.matmul(self.data.swapaxes(-1, -2), out.grad)
                while grad_B.ndim > other.grad.ndim:
                    grad_B = grad_B.sum(dim=0)
                for i in range(grad_B.ndim):
                    if grad_B.shape[i] != other.grad.shape[i]:
                        grad_B = grad_B.sum(dim=i, keepdim=True)
                other.grad += grad_B

        out._backward = _backward
        return out

    def _safe_dim(self, dim: int):
        assert not dim or isinstance(dim, int), "dim must be None or an integer"
        # normalize dim to ensure that calculations which don't like negative numbers work
        if dim is not None and dim < 0:
            # Convert negative axes to positive
            dim += self.ndim  # e.g. -1 => +2 for a 3D tensor
        return dim

    def sum(self, dim: int = -1, keepdim: bool = False):
        dim = self._safe_dim(dim)
        out = Tensor(torch.sum(self.data, dim=dim, keepdim=keepdim) if dim is not None else torch.sum(self.data),
                     self.requires_grad, (self,))
        def _backward():
            if self.requires_grad:
                self.grad += out.grad.broadcast_to(self.shape)
        out._backward = _backward
        return out

    def mean(self, dim: int = -1, keepdim: bool = False):
        dim = self._safe_dim(dim)
        return self.sum(dim, keepdim) / self.shape[dim]

    def exp(self):
        out = Tensor(torch.exp(self.data), self.requires_grad, (self,))
        def _backward():
            if self.requires_grad:
                self.grad += out.data * out.grad # derivative of e^x is just e^x, therefore out.data
        out._backward = _backward
        return out

    def log(self):
        assert torch.all(self.data > 0), f'matrix contains values below 0; cannot take natural logarithm'
        eps = 1e-7 if self.data.dtype == torch.float32 else 1e-16  # Adjust epsilon based on precision
        stabilized_data = torch.clamp(self.data, min=eps)  # Clip values to [eps, ∞)
        out = Tensor(torch.log(stabilized_data), self.requires_grad, (self,))
        def _backward(): # local gradient: d/dx (ln(x)) = 1/x
            if self.requires_grad:
                self.grad += out.grad  / self.data
        out._backward = _backward
        return out

    def relu(self):
        out = Tensor(torch.clamp(self.data, min=0), self.requires_grad, (self,))
        def _backward():
            if self.requires_grad:
                self.grad += (out.data > 0) * out.grad
        out._backward = _backward
        return out

    def __pow__(self, pow: int):
        '''entry-wise exponentiation'''
        assert isinstance(pow, (int, float)), f'power must be int or float but got {type(pow)}'
        out = Tensor(self.data ** pow, self.requires_grad, (self,))
        def _backward(): # local grad: d/dx (x^p) = p * x^(p - 1)
            if self.requires_grad:
                self.grad += out.grad * pow * self.data ** (pow - 1)
        out._backward = _backward
        return out

    def transpose(self, axes: tuple = None):
        if axes is None: # defaults to transposing final two dims
            axes = tuple(dim for dim in range(self.ndim - 2)) + (self.ndim - 1, self.ndim - 2)
        out = Tensor(self.data.permute(axes), self.requires_grad, (self,))
        def _backward():
            if self.requires_grad:
                self.grad += out.grad.permute(axes)
        out._backward = _backward
        return out

    @property
    def T(self):
        return self.transpose()

    def unsqueeze(self, dim):
        out = Tensor(self.data.unsqueeze(dim), self.requires_grad, (self,))
        def _backward():
            if self.requires_grad:
                self.grad += out.grad.squeeze(dim)
        out._backward = _backward
        return out

    def reshape(self, shape: tuple):
        out = Tensor(self.data.reshape(shape), self.requires_grad, (self,))
        def _backward():
            if self.requires_grad:
                self.grad += out.grad.reshape(self.shape)
        out._backward = _backward
        return out

    def __getitem__(self, idx):
        # numpy handles the actual indexing behavior for us
        sliced_data = self.data[idx]
        out = Tensor(sliced_data, self.requires_grad, (self,))
        def _backward():
            if self.requires_grad:
                # np.add.at() correctly distributes the gradient from the sliced tensor back to the original tensor
                _add_at(self.grad, idx, out.grad)
        out._backward = _backward
        return out

    def zero_grad(self):
        self.grad = torch.zeros_like(self.grad)

    def backward(self, grad=None):
        """
        Run backpropagation starting from this tensor.
        Typically called on a scalar loss Tensor.
        """
        topo = []
        visited = set()
        def build_topo(v):
            if v not in visited:
                visited.add(v)
                for child in v._prev:
                    build_topo(child)
                topo.append(v)
        build_topo(self)
        self.grad = torch.ones_like(self.grad) if grad is None else grad
        for node in reversed(topo):
            node._backward()


class Parameter(Tensor):
    """
    A Parameter is a special kind of Tensor that is meant to be trainable.
    Typically used for model weights and biases in neural network layers.
    By default, Parameters require gradients.
    """
    def __init__(self, data: Union[float, int, torch.Tensor]):
        super().__init__(data, requires_grad=True)
