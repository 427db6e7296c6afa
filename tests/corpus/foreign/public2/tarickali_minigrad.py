# Adapted from https://github.com/tarickali/minigrad, core/tensor.py, core/functional.py,
# core/math.py, core/types.py, utils.py and losses.py
# (commit a10dc1a8b5c77acfe7adb7588e5dea3390e0f8c3), test data for the grader's corpus.
#
# What changed for the contract: the files are one module (local imports gone; core/
# math.py's `sum` is named `summation` here so that it does not shadow the builtin in a
# single module); the engine keeps its numpy arrays, renamed `array` (was `data`) and
# `_grad` (was `grad`), and properties `data` (read-only) and `grad` (settable to None or
# a torch tensor) return them as torch tensors (copies); a torch tensor given to the
# constructor goes through the original's own `np.array(data)`; the constructor takes
# `requires_grad` (stored; a result requires grad iff a child does; the engine itself
# never reads it); `relu`, `sigmoid`, `tanh`, `log` (core/functional.py) and `sum`
# (core/math.py) are also reachable as methods; `backward(grad=None)` seeds the output
# with `grad` when it is given (the original always seeds ones); `cross_entropy(target)`
# calls the original `categorical_crossentropy(one_hot(target), logits)` of losses.py with
# utils.one_hot.
# Left out: `identity`, `get_batches` and the other losses.
# Kept as in the original: `_grad` is a float32 zero array from construction on, for every
# tensor (no requires_grad logic), and gradients are accumulated into it in place;
# utils.reduce_shape reduces a broadcast gradient with a *mean* over the broadcast axes
# (and with a mean over everything for a 0-d target); the binary ops extend the operand's
# accumulated gradient to the output shape, add, and reduce it back; `log` clamps its
# input at 1e-15 (the cross-entropy goes through it); recursive build.
#
# Original licence:
#
# MIT License
#
# Copyright (c) 2023 Tarick Ali
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

from __future__ import annotations

import numpy as np
import torch


# ---- core/types.py ----
Array = np.ndarray | list
Numeric = float | int | bool
Dtype = np.dtype
Shape = tuple[int, ...]

# ---- utils.py ----
"""
title : utils.py
create : @tarickali 23/12/07
update: @tarickali 23/12/09
"""



def extend_shape(x: np.ndarray, shape: Shape) -> np.ndarray:
    """Extend the shape of an array to a broadcastable array.

    Parameters
    ----------
    x : np.ndarray
        The array to be extended
    shape : Shape
        The shape x will be extended to

    Returns
    -------
    np.ndarray

    """

    a = x
    if x.shape != shape:
        if x.size == np.prod(shape):
            a = np.reshape(x, shape)
        else:
            try:
                a = np.array(np.broadcast_to(x, shape))
            except:
                pass
    return a


def reduce_shape(x: np.ndarray, shape: Shape) -> np.ndarray:
    """Reduce the shape of an array from a broadcastable array.

    Parameters
    ----------
    x : np.ndarray
        The array to be reduced
    shape : Shape
        The shape x will be reduced to

    Returns
    -------
    np.ndarray

    """

    a = x
    if x.shape != shape:
        if x.size == np.prod(shape):
            a = np.reshape(x, shape)
        else:
            if len(shape) < 1:
                a = np.mean(x).reshape(shape)
            else:
                try:
                    broad = np.broadcast_shapes(x.shape, shape)
                except:
                    pass
                else:
                    # Get the intermediate broadcast shape by prepending 1s
                    inter = [1] * (len(broad) - len(shape)) + list(shape)
                    # Get the axis indices that are not the same
                    axes = []
                    for i in range(len(broad) - 1, -1, -1):
                        if x.shape[i] != inter[i]:
                            axes.append(i)
                    a = np.mean(x, axis=tuple(axes)).reshape(shape)
    return a


def one_hot(x: np.ndarray, k: int = 10) -> np.ndarray:
    """Create a one-hot array of input array with k classes.

    Parameters
    ----------
    x : np.ndarray @ (n, 1)
    k : int = 10
        Number of classes in the one-hot array.

    Returns
    -------
    np.ndarray @ (n, k)

    """

    n = x.shape[0]
    o = np.zeros((n, k))
    o[np.arange(n), x] = 1
    return o


# ---- core/tensor.py ----
"""
title : tensor.py
create : @tarickali 23/12/07
update : @tarickali 23/12/10
"""



class Tensor:
    def __init__(
        self,
        data: Array | Numeric,
        dtype: Dtype = None,
        children: tuple[Tensor, ...] = None,
        requires_grad: bool = False,
    ) -> None:
        if not isinstance(data, np.ndarray):
            data = np.array(data)
        self.array = data if dtype == None else data.astype(dtype)
        self._grad = np.zeros_like(self.array, dtype=np.float32)

        # Info used for flows in the computation graph
        # self.parents = () if parents == None else parents
        self.children = () if children == None else children
        self.requires_grad = bool(requires_grad) or any(c.requires_grad for c in self.children)

        # Info used for computation
        # self._forward = lambda : None
        self._backward = lambda: None

    def zero_grad(self) -> None:
        self._grad = np.zeros_like(self._grad)

    def backward(self, grad=None) -> None:
        order = list[Tensor]()
        visited = set[Tensor]()

        def build(x: Tensor) -> None:
            if x not in visited:
                visited.add(x)
                for child in x.children:
                    build(child)
                order.append(x)

        build(self)

        self._grad = np.ones_like(self.array) if grad is None else np.asarray(grad)
        for x in reversed(order):
            x._backward()

    def __add__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)

        output = Tensor(data=self.array + other.array, children=(self, other))

        def backward():
            self._grad = extend_shape(self._grad, output._grad.shape)
            other._grad = extend_shape(other._grad, output._grad.shape)
            self._grad += output._grad
            other._grad += output._grad
            self._grad = reduce_shape(self._grad, self.array.shape)
            other._grad = reduce_shape(other._grad, other.array.shape)

        output._backward = backward

        return output

    def __sub__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)

        output = Tensor(data=self.array - other.array, children=(self, other))

        def backward():
            self._grad = extend_shape(self._grad, output._grad.shape)
            other._grad = extend_shape(other._grad, output._grad.shape)
            self._grad += output._grad
            other._grad += -output._grad
            self._grad = reduce_shape(self._grad, self.array.shape)
            other._grad = reduce_shape(other._grad, other.array.shape)

        output._backward = backward

        return output

    def __mul__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)

        output = Tensor(data=self.array * other.array, children=(self, other))

        def backward():
            self._grad = extend_shape(self._grad, output._grad.shape)
            other._grad = extend_shape(other._grad, output._grad.shape)
            self._grad += other.array * output._grad
            other._grad += self.array * output._grad
            self._grad = reduce_shape(self._grad, self.array.shape)
            other._grad = reduce_shape(other._grad, other.array.shape)

        output._backward = backward

        return output

    def __matmul__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)

        output = Tensor(data=self.array @ other.array, children=(self, other))

        def backward():
            self._grad = extend_shape(self._grad, output._grad.shape)
            other._grad = extend_shape(other._grad, output._grad.shape)
            self._grad += output._grad @ other.array.T
            other._grad += self.array.T @ output._grad
            self._grad = reduce_shape(self._grad, self.array.shape)
            other._grad = reduce_shape(other._grad, other.array.shape)

        output._backward = backward

        return output

    def __pow__(self, other: Numeric) -> Tensor:
        if not isinstance(other, Numeric):
            raise ValueError("Cannot perform operation on non numeric value.")

        output = Tensor(data=self.array**other, children=(self,))

        def backward():
            self._grad += (other * self.array ** (other - 1)) * output._grad

        output._backward = backward

        return output

    def __neg__(self) -> Tensor:
        output = Tensor(data=-self.array, children=(self,))

        def backward():
            self._grad += -output._grad

        output._backward = backward

        return output

    def __truediv__(self, other: Tensor | Array | Numeric) -> Tensor:
        return self * other**-1

    def __radd__(self, other: Tensor | Array | Numeric) -> Tensor:
        return self + other

    def __rsub__(self, other: Tensor | Array | Numeric) -> Tensor:
        return -self + other

    def __rmul__(self, other: Tensor | Array | Numeric) -> Tensor:
        return self * other

    # TODO: add rmatmul?

    def __eq__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)
        return Tensor(data=self.array == other.array)

    def __ne__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)
        return Tensor(data=self.array != other.array)

    def __ge__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)
        return Tensor(data=self.array >= other.array)

    def __gt__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)
        return Tensor(data=self.array > other.array)

    def __le__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)
        return Tensor(data=self.array <= other.array)

    def __lt__(self, other: Tensor | Array | Numeric) -> Tensor:
        if not isinstance(other, Tensor | Array | Numeric):
            raise ValueError(f"Cannot perform Tensor operation on {type(other)}.")
        if isinstance(other, Array | Numeric):
            other = Tensor(other)
        return Tensor(data=self.array < other.array)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"Tensor(data={self.array.__repr__()}, dtype={self.dtype}, shape={self.shape})"

    # ---- contract: torch views of the numpy storage, and the module functions as methods ----
    @property
    def data(self) -> torch.Tensor:
        return torch.from_numpy(np.array(self.array))

    @property
    def grad(self) -> torch.Tensor:
        return torch.from_numpy(np.array(self._grad))

    @grad.setter
    def grad(self, value) -> None:
        self._grad = np.zeros_like(self.array, dtype=np.float32) if value is None else np.asarray(value)

    def relu(self) -> Tensor:
        return relu(self)

    def sigmoid(self) -> Tensor:
        return sigmoid(self)

    def tanh(self) -> Tensor:
        return tanh(self)

    def log(self) -> Tensor:
        return log(self)

    def sum(self) -> Tensor:
        return summation(self)

    def cross_entropy(self, target) -> Tensor:
        return categorical_crossentropy(Tensor(one_hot(np.asarray(target), self.shape[1])), self)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> Dtype:
        return self.array.dtype


# ---- core/functional.py ----
"""
title : functional.py
create : @tarickali 23/12/07
update : @tarickali 23/12/09
"""



def sigmoid(x: Tensor) -> Tensor:
    data = 1 / (1 + np.exp(-x.array))
    output = Tensor(data=data, children=(x,))

    def backward():
        x._grad += ((1 - data) * data) * output._grad

    output._backward = backward

    return output


def relu(x: Tensor) -> Tensor:
    data = np.maximum(x.array, 0)
    output = Tensor(data=data, children=(x,))

    def backward():
        x._grad += (output.array > 0) * output._grad

    output._backward = backward

    return output


def tanh(x: Tensor) -> Tensor:
    data = np.tanh(x.array)
    output = Tensor(data=data, children=(x,))

    def backward():
        x._grad += (1 - data**2) * output._grad

    output._backward = backward

    return output


def log(x: Tensor) -> Tensor:
    data = np.log(np.maximum(x.array, 1e-15))
    output = Tensor(data=data, children=(x,))

    def backward():
        x._grad += (1 / np.maximum(x.array, 1e-15)) * output._grad

    output._backward = backward

    return output


def clip(x: Tensor, low: float, high: float) -> Tensor:
    """Clip tensor values to [low, high]. Gradient passes through where low < x < high."""
    data = np.clip(x.array, low, high)
    output = Tensor(data=data, children=(x,))

    def backward():
        mask = (x.array >= low) & (x.array <= high)
        x._grad += mask * output._grad

    output._backward = backward

    return output


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    # Numerically stable softmax: exp(x - max(x)) / sum(exp(x - max(x)))
    x_max = np.max(x.array, axis=axis, keepdims=True)
    exp_x = np.exp(x.array - x_max)
    data = exp_x / np.sum(exp_x, axis=axis, keepdims=True)
    output = Tensor(data=data, children=(x,))

    def backward():
        # d(softmax)/dx = s * (dL/ds - sum(s * dL/ds))
        s = data
        grad_sum = np.sum(s * output._grad, axis=axis, keepdims=True)
        x._grad += s * (output._grad - grad_sum)

    output._backward = backward

    return output


# ---- core/math.py ----
"""
title : math.py
create : @tarickali 23/12/09
update : @tarickali 23/12/09
"""



def summation(x: Tensor, axis: int | list[int] = None) -> Tensor:  # core/math.py's `sum`, renamed in one module
    output = Tensor(data=np.sum(x.array, axis=axis), children=(x,))

    def backward():
        x._grad = extend_shape(x._grad, output._grad.shape)
        x._grad += output._grad
        x._grad = reduce_shape(x._grad, x.array.shape)

    output._backward = backward

    return output


# ---- losses.py (the loss the contract's cross_entropy reaches) ----
def categorical_crossentropy(y: Tensor, o: Tensor, logits: bool = True) -> Tensor:
    """Computes the categorical crossentropy between true and pred arrays.

    Parameters
    ----------
    y : Tensor @ (m, n_out)
        The target ground truth labels.
    o : Tensor @ (m, n_out)
        The network output predictions.
    logits : bool = True
        Indicates whether the values of o are activated.

    Returns
    -------
    Tensor : loss @ ()


    """

    assert y.shape == o.shape

    n = y.shape[0]
    if logits is True:
        a = softmax(o)
        loss = summation(-y * log(a)) / n
    else:
        a = clip(o, 1e-15, 1 - 1e-15)
        loss = summation(-y * log(a)) / n
    assert loss.shape == ()

    return loss
