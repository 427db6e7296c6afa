# Adapted from https://github.com/avramdj/minigrad, src/minigrad/engine/tensor.py,
# device_function.py, utils.py, device.py and backends/cpu.py at commit
# d3bc5b40d4d2b4646c0bf0bff4a81e51891eea9b (2022-05-06, the state its README and later
# forks point to; the repository's newest commit, cb5b38c574dbc8bd0a1467c7efa9a00b9ddda2e1,
# is a later rewrite), test data for the grader's corpus.
#
# What changed for the contract: the files are one module, CPU only (Device has no
# environment lookup and no CUDA entry); the engine keeps its numpy arrays (the CPUDevice
# ndarray subclass), renamed `array` (was `data`) and `_grad` (was `grad`, a Tensor), and
# properties `data` (read-only) and `grad` (settable to None or a torch tensor) return
# them as torch tensors (copies); the constructor is `Tensor(data, requires_grad=False,
# device=None)` (the original: `Tensor(data, device=None, requires_grad=True)`; the other
# internal constructions pass requires_grad by keyword (ones_like/zeros_like/rand_like now
# pass `device=` by keyword), except the gradient tensors and detach/copy, which now
# default to False) and a torch tensor arrives as the ndarray it holds; `backward(grad=
# None)` seeds the output with `grad` when it is given; a full `sum()`/`mean()` (axis=
# None) returns a 0-d result where the original kept the dims (keepdims=True).
# Kept as in the original: ReLU.backward passes the gradient where input >= 0; Mean's
# backward broadcasts the gradient without dividing by the element count ("TODO: FIX");
# Transpose's backward calls `grad.reshape()` with no shape ("TODO: FINISH THIS");
# `__getitem__` returns a new tensor with no graph link; `unbroadcast` only sums leading
# axes (and special-cases shape (1,)), so a (1, m) or (n, 1) operand gets an unreduced
# gradient; `is_grad()` returns the NO_GRAD flag, and inside no_grad a result keeps
# `requires_grad` True while its graph is dropped; backward seeds every node of its
# topological order that has no gradient yet with float32 ones (the output, and also any
# constant in the graph); the recursive topological sort; no `__rtruediv__`.
#
# Original licence:
#
# MIT License
#
# Copyright (c) 2021 Avram Ðorđević
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

from numbers import Number
from typing import Union, Iterable

import numpy as np
import torch


# ---- engine/backends/cpu.py ----
class CPUDevice(np.ndarray):
    """
    The CPU device is a numpy interface
    """

    def log(self):
        return np.log(self)

    def pow(self, a):
        return np.power(self, a)

    def exp(self):
        return np.exp(self)

    def sqrt(self):
        return np.sqrt(self)

    def tanh(self):
        return np.tanh(self)

    def relu(self):
        return np.maximum(self, 0)

    def to_cpu(self):
        return self

    def add_axis(self, axis):
        return np.expand_dims(self, axis)

    def ones(self):
        return np.ones_like(self)

    def zeros(self):
        return np.zeros_like(self)

    def clip(self, a, b):
        return np.clip(self, a, b)

    def amax_(self, axis, keepdims=False):
        return np.amax(self, axis=axis, keepdims=keepdims)

    def swapaxes_(self, a, b):
        return np.swapaxes(self, a, b)

    def max_(self, axis, keepdims=False):
        return self.amax_(axis, keepdims=keepdims)

    def flatten_(self, start_dim=0):
        return self.reshape(-1, np.prod(self.shape[start_dim:]))

    def apply(self, func, axis):
        return np.apply_along_axis(func, axis, self)

    def expand_dims_(self, n):
        return np.expand_dims(self, n)

    def broadcast_to_(self, shape):
        return np.broadcast_to(self, shape)

    @staticmethod
    def array(data):
        return np.array(data).view(CPUDevice)


# ---- engine/device.py (CPU only) ----
class Device:
    DEFAULT = "cpu"
    CURRENT = DEFAULT
    devices = {
        "cpu": CPUDevice,
        # "cuda": backends.CudaDevice
    }

    def __class_getitem__(cls, item: str):
        device = cls.devices.get(item.lower(), None)
        if not device:
            raise NotImplementedError(f"Device {item} not found")
        return device

    @staticmethod
    def set_device(device_name: str):
        Device.CURRENT = device_name

    @staticmethod
    def to(data, device):
        return Device.devices.get(device, Device.CURRENT).array(data)


# ---- engine/utils.py ----
NO_GRAD = False


def is_grad():
    return NO_GRAD


class no_grad:
    def __enter__(self):
        global NO_GRAD
        NO_GRAD = True

    def __exit__(self, exc_type, exc_val, exc_tb):
        global NO_GRAD
        NO_GRAD = False


# ---- engine/device_function.py ----
class Function:
    """
    Function base for Add, Sub, etc...
    IMPORTANT: These functions work on raw data buffers, not Tensors
    """

    pass


def broadcast(a, shape):
    return a.broadcast_to_(shape)


def unbroadcast(a, shape):
    if shape == (1,):
        return a.sum().reshape((1,))
    axdiff = len(a.shape) - len(shape)
    if axdiff <= 0:
        return a
    return a.sum(axis=tuple(range(axdiff)))


class Add(Function):
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def forward(self):
        return self.a + self.b

    def backward(self, grad):
        return [unbroadcast(grad, self.a.shape), unbroadcast(grad, self.b.shape)]


class Sub(Function):
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def forward(self):
        return self.a - self.b

    def backward(self, grad):
        return [unbroadcast(grad, self.a.shape), unbroadcast(-grad, self.b.shape)]


class Mul(Function):
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def forward(self):
        return self.a * self.b

    def backward(self, grad):
        da = self.b * grad
        db = self.a * grad
        return [unbroadcast(da, self.a.shape), unbroadcast(db, self.b.shape)]


class Pow(Function):
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def forward(self):
        return self.a.pow(self.b)

    def backward(self, grad):
        da = self.a.pow(self.b - 1.0) * self.b * grad
        return [unbroadcast(da, self.a.shape)]


# class Dot(Function):
#     def __init__(self, a, b):
#         self.a = a
#         self.b = b
#         self.is_vector = len(self.b.shape) == 1
#
#     def forward(self):
#         if self.is_vector:
#             self.b.shape = (self.b.shape[0], 1)
#             res = self.a.dot(self.b)
#             assert len(res.shape) == 2
#             res.shape = (res.shape[0],)
#             self.b.shape = (self.b.shape[0],)
#             return res
#         return self.a.dot(self.b)
#
#     def backward(self, grad):
#         if self.is_vector:
#             grad.shape = (grad.shape[0], 1)
#             self.b.shape = (self.b.shape[0], 1)
#             da = grad.dot(self.b.T)
#             db = self.a.T.dot(grad)
#             db.shape = (db.shape[0],)
#             grad.shape = (grad.shape[0],)
#             self.b.shape = (self.b.shape[0],)
#         else:
#             da = grad.dot(self.b.T)
#             db = self.a.T.dot(grad)
#         return [unbroadcast(da, self.a.shape), unbroadcast(db, self.b.shape)]


class MatMul(Function):
    def __init__(self, a, b):
        self.a = a
        self.b = b

    def forward(self):
        return self.a @ self.b

    def backward(self, grad):
        da = grad @ self.b.swapaxes_(-2, -1)
        db = self.a.swapaxes_(-2, -1) @ grad
        return [unbroadcast(da, self.a.shape), unbroadcast(db, self.b.shape)]


class Log(Function):
    def __init__(self, a):
        self.a = a

    def forward(self):
        return self.a.log()

    def backward(self, grad):
        da = grad / self.a
        return [da]


class Exp(Function):
    def __init__(self, a):
        self.a = a

    def forward(self):
        return self.a.exp()
        # return self.a.clip(-88, 88).exp()  # clip because log(FLOAT_MAX) = 88.7

    def backward(self, grad):
        da = self.forward() * grad
        return [da]


class Sqrt(Function):
    def __init__(self, a):
        self.a = a

    def forward(self):
        return self.a.sqrt()

    def backward(self, grad):
        da = 0.5 * self.forward().pow(-1) * grad
        return [da]


class Tanh(Function):
    def __init__(self, a):
        self.a = a

    def forward(self):
        return self.a.tanh()

    def backward(self, grad):
        da = (1 - self.a.tanh() ** 2) * grad
        return [da]


class ReLU(Function):
    def __init__(self, a):
        self.a = a

    def forward(self):
        return self.a.relu()

    def backward(self, grad):
        da = (self.a >= 0) * grad
        return [da]


class Reshape(Function):
    def __init__(self, a, shape):
        self.a = a
        self.shape = shape

    def forward(self):
        return self.a.reshape(self.shape)

    def backward(self, grad):
        return [grad.reshape(self.a.shape)]


class Flatten(Function):
    def __init__(self, a, start_dim):
        self.a = a
        self.start_dim = start_dim

    def forward(self):
        return self.a.flatten_(start_dim=self.start_dim)

    def backward(self, grad):
        da = grad.reshape(self.a.shape)
        return [da]


class Sum(Function):
    def __init__(self, a, axis):
        self.a = a
        self.axis = axis

    def forward(self):
        return self.a.sum(axis=self.axis, keepdims=self.axis is not None)

    # TODO: FIX
    def backward(self, grad):
        return [broadcast(grad, self.a.shape)]


class Mean(Function):
    def __init__(self, a, axis):
        self.a = a
        self.axis = axis

    def forward(self):
        return self.a.mean(axis=self.axis, keepdims=self.axis is not None)

    # TODO: FIX
    def backward(self, grad):
        return [broadcast(grad, self.a.shape)]


class Max(Function):
    def __init__(self, a, axis):
        self.a = a
        self.axis = axis
        self.ret = None

    def forward(self):
        self.ret = self.a.amax_(axis=self.axis, keepdims=True)
        return self.ret

    def backward(self, grad):
        ones = self.a == grad
        # TODO: CHECK THIS
        div = ones.sum(axis=self.axis, keepdims=True)
        da = ones * grad / div
        return [da]


class Min(Function):
    def __init__(self, a, axis):
        self.a = a
        self.axis = axis

    def forward(self):
        return self.a.amin(axis=self.axis, keepdim=True)

    # TODO: FIX BACKWARD
    def backward(self, grad):
        ones = self.a == grad
        div = ones.sum(axis=self.axis, keepdim=True)
        da = ones * grad / div
        return [unbroadcast(da, self.a.shape)]


class Neg(Function):
    def __init__(self, a):
        self.a = a

    def forward(self):
        return -self.a

    def backward(self, grad):
        return [unbroadcast(-grad, self.a.shape)]


class Transpose(Function):
    def __init__(self, a):
        self.a = a

    def forward(self):
        return self.a.T

    # TODO: FINISH THIS
    def backward(self, grad):
        return [unbroadcast(grad.reshape(), self.a.shape)]


# ---- engine/tensor.py ----
class Tensor:
    """Tensor and its gradient"""

    def __init__(
        self, data: Union[list, np.ndarray, "Tensor"], requires_grad=False, device=None
    ):
        if isinstance(data, torch.Tensor):
            data = data.numpy()  # contract boundary: a torch tensor arrives as the ndarray it holds
        self.device = device if device else Device.CURRENT
        self.array = self._move(data, self.device)
        self._grad = None
        self.requires_grad = requires_grad
        self._function = None
        self._parents = []

    # ---- contract: torch copies of the numpy storage ----
    @property
    def data(self) -> torch.Tensor:
        return torch.from_numpy(np.array(self.array))

    @property
    def grad(self):
        return None if self._grad is None else torch.from_numpy(np.array(self._grad.array))

    @grad.setter
    def grad(self, value):
        self._grad = None if value is None else Tensor(np.asarray(value))

    def backward(self, grad=None):
        """
        Computes the gradients of `self` with respect to each node `x` and fills `x.grad`
        """
        if grad is not None:
            self._grad = Tensor(grad)
        visited = set()
        topo_nodes: list[Tensor] = []

        def topo_dag(node: Tensor):
            if node not in visited:
                visited.add(node)
                for p in node._parents:
                    topo_dag(p)
                topo_nodes.append(node)

        topo_dag(self)
        for v in reversed(topo_nodes):
            if not v._grad:
                v._grad = v.ones_like(v)
                v._grad.requires_grad = False
            if not v._function:
                continue
            nabla = v._function.backward(v._grad.array)
            for grad, parent in zip(nabla, v._parents):
                if parent.requires_grad:
                    parent._grad = Tensor(
                        grad + (parent._grad.array if parent._grad else 0)
                    )
                pass

    def _backward(self):
        """
        Recursive implementation of backward, test?
        """
        if not self._grad:
            self._grad = self.ones_like(self)
            self._grad.requires_grad = False
        if not self._function:
            return
        nabla = self._function.backward(self._grad.array)
        for grad, parent in zip(nabla, self._parents):
            parent._grad = Tensor(grad + (parent._grad.array if parent._grad else 0))
            parent.backward()

    @property
    def shape(self):
        return self.array.shape

    def detach(self):
        return self.__class__(self.array)

    def numpy(self):
        return self.detach().array

    def zero_grad(self):
        self._grad = None
        self._parents = []
        self._function = None

    def dot(self, other: "Tensor"):
        return self._binary_op(self, other, Dot)

    def log(self):
        return self._unary_op(self, Log)

    def exp(self):
        return self._unary_op(self, Exp)

    def tanh(self):
        return self._unary_op(self, Tanh)

    def sqrt(self):
        return self._unary_op(self, Sqrt)

    def relu(self):
        return self._unary_op(self, ReLU)

    def flatten(self, start_dim=0):
        return self._unary_param_op(self, start_dim, Flatten)

    def sum(self, axis=None):
        # assert axis is not None or len(self.shape) == 1, ("Must provide axis for element-wise "
        #                                                   "sum when dims > 1")
        return self._unary_param_op(self, axis, Sum)

    def mean(self, axis=None):
        # assert axis is not None or len(self.shape) == 1, ("Must provide axis for element-wise "
        #                                                   "sum when dims > 1")
        return self._unary_param_op(self, axis, Mean)

    def max(self, axis=None):
        return self._unary_param_op(self, axis, Max)

    def min(self, axis=None):
        return self._unary_param_op(self, axis, Min)

    def clip(self, a, b):
        ret = self.copy()
        ret.array.clip(a, b)
        return ret

    def copy(self):
        ret = self.__class__(self.array)
        ret.requires_grad = self.requires_grad
        ret._function = self._function
        ret._parents = self._parents
        if self._grad:
            ret._grad = self._grad.copy()
        return ret

    @property
    def T(self):
        return self._unary_op(self, Transpose)

    def __neg__(self):
        return self._unary_op(self, Neg)

    def __add__(self, other: "Tensor"):
        return self._binary_op(self, other, Add)

    def __radd__(self, other: "Tensor"):
        return self._binary_op(other, self, Add)

    def __iadd__(self, other):
        return self._binary_op(self, other, Add, inplace=True)

    def __sub__(self, other: "Tensor"):
        return self._binary_op(self, other, Sub)

    def __rsub__(self, other: "Tensor"):
        return self._binary_op(other, self, Sub)

    def __isub__(self, other: "Tensor"):
        return self._binary_op(self, other, Sub, inplace=True)

    def __mul__(self, other: "Tensor"):
        return self._binary_op(self, other, Mul)

    def __rmul__(self, other: "Tensor"):
        return self._binary_op(other, self, Mul)

    def __truediv__(self, other: "Tensor"):
        z = other**-1.0
        return self._binary_op(self, z, Mul)

    def __matmul__(self, other: "Tensor"):
        return self._binary_op(self, other, MatMul)

    def __pow__(self, alpha, modulo=None):
        return self._unary_param_op(self, alpha, Pow)

    def __str__(self):
        return self.array.__str__()

    def __repr__(self):
        return f"<Tensor {self.array.shape}>"

    def __getitem__(self, item):
        return Tensor(self.array[item], requires_grad=self.requires_grad)

    def add_axis(self, axis):
        self.array = self.array.add_axis(axis)
        return self

    @staticmethod
    def _binary_op(a: "Tensor", b: "Tensor", func: Function.__class__, inplace=False):
        if isinstance(b, Number):
            b = Tensor(np.full(a.shape, b, dtype=np.float32), requires_grad=False)
        if isinstance(a, Number):
            a = Tensor(np.full(b.shape, a, dtype=np.float32), requires_grad=False)
        func = func(a.array, b.array)
        res = Tensor(func.forward(), requires_grad=(a.requires_grad or b.requires_grad))
        if not a.requires_grad and not b.requires_grad or is_grad():
            if inplace:
                a.array = res.array
                return a
            return res
        if inplace:
            raise Exception(
                "Attempted inplace operation on a leaf variable, set requires_grad=False or disable "
                "gradients globally"
            )
        res._function = func
        res._parents = [a, b]
        return res

    @staticmethod
    def _unary_op(a: "Tensor", func: Function.__class__):
        func = func(a.array)
        res = Tensor(func.forward(), requires_grad=a.requires_grad)
        if not a.requires_grad or is_grad():
            return res
        res._function = func
        res._parents = [a]
        return res

    @staticmethod
    def _unary_param_op(a: "Tensor", alpha, func: Function.__class__):
        func = func(a.array, alpha)
        res = Tensor(func.forward(), requires_grad=a.requires_grad)
        if not a.requires_grad or is_grad():
            return res
        res._function = func
        res._parents = [a]
        return res

    @classmethod
    def ones(cls, shape: Union[int, Iterable[int]], device=None, requires_grad=True):
        device = device if device else Device.CURRENT
        return cls(np.ones(shape), device=device, requires_grad=requires_grad)

    @classmethod
    def zeros(cls, shape: Union[int, Iterable[int]], device=None, requires_grad=True):
        device = device if device else Device.CURRENT
        return cls(np.zeros(shape), device=device, requires_grad=requires_grad)

    @classmethod
    def rand(cls, shape: Union[int, Iterable[int]], device=None, requires_grad=True):
        device = device if device else Device.CURRENT
        return cls(np.random.rand(*shape), device=device, requires_grad=requires_grad)

    @classmethod
    def rand_kaiming(
        cls, shape: Union[int, Iterable[int]], device=None, requires_grad=True
    ):
        device = device if device else Device.CURRENT
        # return cls(np.random.rand(*shape)*np.sqrt(2./np.prod(shape)), device=device, requires_grad=requires_grad)
        bound = np.sqrt(1.0 / shape[0])
        return cls(
            np.random.uniform(-bound, bound, shape),
            device=device,
            requires_grad=requires_grad,
        )

    @classmethod
    def full(
        cls,
        shape: Union[int, Iterable[int]],
        a: Union[int, float],
        device=None,
        requires_grad=True,
    ):
        device = device if device else Device.CURRENT
        return cls(np.full(shape, a), device=device, requires_grad=requires_grad)

    @classmethod
    def eye(cls, size: int, device=None, requires_grad=True):
        device = device if device else Device.CURRENT
        return cls(np.eye(size), device=device, requires_grad=requires_grad)

    @classmethod
    def ones_like(cls, a: Union[np.ndarray, "Tensor"], device=None, requires_grad=True):
        device = device if device else a.device
        if isinstance(a, Tensor):
            a = a.array
        return cls(
            np.ones_like(a, dtype=np.float32), device=device, requires_grad=requires_grad
        )

    @classmethod
    def rand_like(cls, a: Union[np.ndarray, "Tensor"], device=None, requires_grad=True):
        device = device if device else a.device
        if isinstance(a, Tensor):
            a = a.array
        return cls(
            np.random.rand(a, dtype=np.float32), device=device, requires_grad=requires_grad
        )

    @classmethod
    def zeros_like(
        cls, a: Union[np.ndarray, "Tensor"], device=None, requires_grad=True
    ):
        device = device if device else a.device
        if isinstance(a, Tensor):
            a = a.array
        return cls(
            np.zeros_like(a, dtype=np.float32), device=device, requires_grad=requires_grad
        )

    @staticmethod
    def _move(data, device) -> np.ndarray:
        if isinstance(data, Number):
            data = [data]
        if isinstance(data, list):
            data = np.array(data, dtype=np.float32)
        if isinstance(data, np.ndarray):
            return Device[device].array(data)
        if isinstance(data, Tensor):
            return data.array
        if isinstance(data, Device[device]):
            return data
        raise RuntimeError(f"Unknown data type {type(data)}")


class Parameter(Tensor):
    def __init__(self, data: Union[list, np.ndarray, "Tensor"], **kwargs):
        super().__init__(data, **kwargs)


class Variable(Tensor):
    def __init__(self, data: Union[list, np.ndarray, "Tensor"], **kwargs):
        super().__init__(data, **kwargs)
        self.requires_grad = False
