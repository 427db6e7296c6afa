# Adapted from https://github.com/JhihYangWu/minigrad, minigrad/tensor.py and
# minigrad/accelerators/acc_cpu.py (commit 978135cf8589b9be0210e695951f856ba6c6cfaa),
# test data for the grader's corpus.
#
# What changed for the contract: the two files are one module; the engine keeps its numpy
# arrays, renamed `array` (was `data`) and `_grad` (was `grad`, a Tensor), and properties
# `data` (read-only) and `grad` (settable to None or a torch tensor) return them as torch
# tensors (copies); the constructor takes `requires_grad` (stored; a result requires grad
# iff an input does; the engine itself never reads it) and a torch tensor arrives as the
# ndarray it holds; `backward` takes the contract's `grad` as its first parameter and
# seeds the output with it when given (then any shape; the original always seeded ones and
# asserted shape (1,)); the registered ops are also reachable under the contract's names:
# `+ - * / @` are `add sub mul div matmul`, `reshape(shape)` passes `shape=` (the op's
# keyword), `max_pool2d(k)` is `maxpool2d(kernel_size=(k, k), stride=k)`, and
# `batch_norm(eps)` is `batchnorm1d` with constant tensors of ones and zeros as its scale
# and shift.
# Kept as in the original: a user-called backward runs the output's own backward once in
# the topological loop and once more after it, so the output op's direct inputs get its
# gradient twice; Div.backward returns `x * grad` as the divisor's gradient; ReLU.backward
# passes the gradient where x >= 0; every backward first sets the `.grad` of every tensor
# of the graph, constants included, to zero (so gradients do not accumulate across
# backward calls; there is no requires_grad logic); `sum()` returns shape (1,), not 0-d
# (numpy returns scalars, which the constructor rejects, for ops on 0-d arrays); Sum, Max,
# Conv2D, MaxPool2d produce float32 arrays unless Tensor.NEED_PRECISION is set;
# BatchNorm1D divides by sqrt(var) + eps in its forward pass and by sqrt(var + eps) in its
# backward; operands must have the same shape (a ValueError otherwise); no Python numbers
# as operands, no exp/log (only exp2/log2), no `.T`, no no_grad; a warning is printed once
# for a non-float32 tensor.
#
# Original licence:
#
# MIT License
#
# Copyright (c) 2023 JhihYang Wu
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

from functools import partialmethod

import numpy as np
import torch


# ---- minigrad/tensor.py ----
class Tensor:
    MUTE_FLOAT_WARNING = False
    NEED_PRECISION = False

    def __init__(self, data, requires_grad=False):
        if isinstance(data, torch.Tensor):
            data = data.numpy()  # contract boundary: a torch tensor arrives as the ndarray it holds
        if isinstance(data, list):
            data = np.array(data, dtype=np.float32)
        elif isinstance(data, np.ndarray):
            pass
        else:
            raise TypeError("Can only construct Tensor with lists or numpy arrays.")

        if data.dtype != np.float32 and not Tensor.MUTE_FLOAT_WARNING:
            print(f"Warning: Tensor with shape {data.shape} isn't float32.")
            Tensor.MUTE_FLOAT_WARNING = True

        self.array = data
        self._grad = None
        self._context = None  # Used for autograd.
        self.requires_grad = bool(requires_grad)  # contract attribute; the engine never reads it

    # ---- contract: torch copies of the numpy storage ----
    @property
    def data(self):
        return torch.from_numpy(np.array(self.array))

    @property
    def grad(self):
        return None if self._grad is None else torch.from_numpy(np.array(self._grad.array))

    @grad.setter
    def grad(self, value):
        self._grad = None if value is None else Tensor(np.asarray(value))

    def __repr__(self):
        return f"Tensor with data {self.array} and grad {self._grad}"

    @property
    def shape(self):
        return self.array.shape

    @staticmethod
    def zeros(*shape):
        return Tensor(np.zeros(shape, dtype=np.float32))

    @staticmethod
    def ones(*shape):
        return Tensor(np.ones(shape, dtype=np.float32))

    @staticmethod
    def randn(*shape):
        return Tensor(np.random.randn(*shape).astype(np.float32))

    @staticmethod
    def rand_init(*shape):
        vals = np.random.uniform(-1.0, 1.0, size=shape) / np.sqrt(np.prod(shape))
        return Tensor(vals.astype(np.float32))

    def backward(self, grad=None, user_called=True, want_zero_grads=True):
        def zero_grads(t, visited=set()):
            if t._grad is None:
                t._grad = Tensor(np.zeros(t.array.shape, dtype=t.array.dtype))
            else:
                t._grad.array[:] = 0
            if t._context is not None:
                for p_t in t._context.parents:
                    if p_t not in visited:
                        visited.add(p_t)
                        zero_grads(p_t, visited)
        def find_topological_order(t, ordered_list, in_list, visited=set()):
            if t._context is not None:
                for p_t in t._context.parents:
                    if p_t not in visited:
                        visited.add(p_t)
                        find_topological_order(p_t, ordered_list, in_list, visited)
            if t not in in_list:
                ordered_list.append(t)
                in_list.add(t)
    
        if self._context is None:
            return  # You are root node, no need to calculate more grads.

        if user_called:
            assert grad is not None or self.array.shape == (1,)  # Make sure loss is a single number.
            if want_zero_grads:
                zero_grads(self)
            self._grad = Tensor(np.ones(self.array.shape, dtype=self.array.dtype)) if grad is None else Tensor(np.asarray(grad))
            ordered_list = []
            find_topological_order(self, ordered_list, set())
            for t in reversed(ordered_list):
                t.backward(user_called=False)

        parent_grads = self._context.func_applied.backward(self._context, self._grad.array)
        for p, g in zip(self._context.parents, parent_grads):
            if g.shape != p.array.shape:
                raise ValueError(f"Computed grad doesn't match data's shape. {g.shape} != {p.array.shape}.")
            if p._grad is None:
                p._grad = Tensor(np.zeros(p.array.shape, dtype=p.array.dtype))
            p._grad.array += g

class Context:
    def __init__(self, func_applied, func_name, func_kwargs, *parents):
        self.func_applied = func_applied
        self.func_name = func_name
        self.parents = parents
        self.safe = []
        self.func_kwargs = func_kwargs

    def save_for_backward(self, *x):
        self.safe.extend(x)

class Function:
    def apply_func(self, func, func_name, *x, **kwargs):  # self is the Tensor that the function is applied on.
        context = Context(func, func_name, kwargs, self, *x)
        retval = Tensor(func.forward(context, self.array, *[t.array for t in x], **kwargs))
        retval._context = context
        retval.requires_grad = self.requires_grad or any(t.requires_grad for t in x)  # contract attribute
        return retval

# Load ops into Tensor class.
def register(name, func):
    setattr(Tensor, name, partialmethod(func.apply_func, func, name))


# ---- minigrad/accelerators/acc_cpu.py ----
class Mul(Function):
    @staticmethod
    def forward(context, x, y):
        context.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(context, your_grad):
        x, y = context.safe
        return (y * your_grad, x * your_grad)
register("mul", Mul)

class Div(Function):
    @staticmethod
    def forward(context, x, y):
        context.save_for_backward(x, y)
        return x / y

    @staticmethod
    def backward(context, your_grad):
       x, y = context.safe
       return (1/y * your_grad, x * your_grad)
register("div", Div)

class Add(Function):
    @staticmethod
    def forward(context, x, y):
        return x + y

    @staticmethod
    def backward(context, your_grad):
        return (your_grad, your_grad)
register("add", Add)

class Sub(Function):
    @staticmethod
    def forward(context, x, y):
        return x - y

    @staticmethod
    def backward(context, your_grad):
        return (your_grad, -your_grad)
register("sub", Sub)

class MatMul(Function):
    @staticmethod
    def forward(context, input, weight):
        context.save_for_backward(input, weight)
        return input.dot(weight)

    @staticmethod
    def backward(context, your_grad):
        input, weight = context.safe
        input_grad = your_grad.dot(weight.T)
        weight_grad = your_grad.T.dot(input).T
        return (input_grad, weight_grad)
register("matmul", MatMul)

class Sum(Function):
    @staticmethod
    def forward(context, x):
        context.save_for_backward(x)
        return np.array([x.sum()], dtype=get_float_32_64())

    @staticmethod
    def backward(context, your_grad):
        x = context.safe[0]
        return (your_grad * np.ones(x.shape, dtype=get_float_32_64()),)
register("sum", Sum)

class ReLU(Function):
    @staticmethod
    def forward(context, x):
        context.save_for_backward(x)
        return np.maximum(x, 0)

    @staticmethod
    def backward(context, your_grad):
        x = context.safe[0]
        return (your_grad * (x >= 0),)
register("relu", ReLU)

class LeakyReLU(Function):
    @staticmethod
    def forward(context, x, a=0.01):
        context.save_for_backward(x)
        context.save_for_backward(a)
        return np.maximum(x, 0) + a * np.minimum(x, 0)

    @staticmethod
    def backward(context, your_grad):
        x, a = context.safe
        return (your_grad * (1 * (x >= 0) + a * (x < 0)),)
register("leaky_relu", LeakyReLU)

class Log2(Function):
    @staticmethod
    def forward(context, x):
        context.save_for_backward(x)
        return np.log2(x)

    @staticmethod
    def backward(context, your_grad):
        x = context.safe[0]
        return (your_grad / (x * np.log(2) + 1e-8),)
register("log2", Log2)

class Softmax(Function):
    @staticmethod
    def forward(context, x, dim):
        s_x = np.exp(x)
        s_x = s_x / (np.sum(s_x, axis=dim).reshape(-1, 1) + 1e-8)
        context.save_for_backward(s_x)
        return s_x

    @staticmethod
    def backward(context, your_grad):
        def find_grad_1_dim(s_x, g_s_x):
            l = s_x.shape[0]
            matrix = ((-s_x.dot(s_x.T)) *
                      (1 - np.eye(l)) +
                      (np.eye(l) * (s_x * (1 - s_x))))
            return g_s_x.dot(matrix).astype(get_float_32_64())
        batch_size, num_features = context.safe[0].shape
        parent_grad = np.zeros((batch_size, num_features), dtype=get_float_32_64())
        for i in range(batch_size):
            s_x = context.safe[0][i, :].reshape(1, -1).T
            g_x = find_grad_1_dim(s_x, your_grad[i, :])
            parent_grad[i, :] = g_x
        return (parent_grad,)
register("softmax", Softmax)

class Exp2(Function):
    @staticmethod
    def forward(context, x):
        e_x = np.exp2(x)
        context.save_for_backward(e_x)
        return e_x

    @staticmethod
    def backward(context, your_grad):
        e_x = context.safe[0]
        return (your_grad * e_x * np.log(2),)
register("exp2", Exp2)

class Sin(Function):
    @staticmethod
    def forward(context, x):
        context.save_for_backward(x)
        return np.sin(x)

    @staticmethod
    def backward(context, your_grad):
        x = context.safe[0]
        return (your_grad * np.cos(x),)
register("sin", Sin)

class Sqrt(Function):
    @staticmethod
    def forward(context, x):
        sqrt_x = np.sqrt(x)
        context.save_for_backward(sqrt_x)
        return sqrt_x

    @staticmethod
    def backward(context, your_grad):
        sqrt_x = context.safe[0]
        return (your_grad / (2 * sqrt_x),)
register("sqrt", Sqrt)

class Max(Function):
    @staticmethod
    def forward(context, x):
        context.save_for_backward(x)
        context.save_for_backward(x.argmax())
        return np.array([x.max()], dtype=get_float_32_64())

    @staticmethod
    def backward(context, your_grad):
        x, x_argmax = context.safe
        parent_grad = np.zeros(np.prod(x.shape), dtype=get_float_32_64())
        parent_grad[x_argmax] = your_grad
        parent_grad = parent_grad.reshape(x.shape)
        return (parent_grad,)
register("max", Max)

class Reshape(Function):
    @staticmethod
    def forward(context, x, shape=None):
        context.save_for_backward(x.shape)
        return x.reshape(shape)

    @staticmethod
    def backward(context, your_grad):
        x_shape = context.safe[0]
        return (your_grad.reshape(x_shape),)
register("reshape", Reshape)

class Conv2D(Function):
    @staticmethod
    def forward(context, x, w, stride=1):
        context.save_for_backward(x)
        context.save_for_backward(w)
        context.save_for_backward(stride)
        batch_size, x_channels, x_h, x_w = x.shape
        num_filters, w_channels, w_h, w_w = w.shape
        assert x_channels == w_channels
        out_shape = (batch_size,
                     num_filters,
                     (x_h - w_h) // stride + 1,
                     (x_w - w_w) // stride + 1)
        out = np.zeros(out_shape, dtype=get_float_32_64())
        for i in range(out_shape[2]):
            for j in range(out_shape[3]):
                for k in range(num_filters):
                    filter = w[k, :, :, :]
                    chunk = x[:, :, i*stride:i*stride+w_h, j*stride:j*stride+w_w]
                    out[:, k, i, j] = (chunk * filter).reshape(batch_size, -1).sum(axis=1)
        return out

    @staticmethod
    def backward(context, your_grad):
        x, w, stride = context.safe
        batch_size, x_channels, x_h, x_w = x.shape
        num_filters, w_channels, w_h, w_w = w.shape
        x_grad = np.zeros(x.shape, dtype=get_float_32_64())
        w_grad = np.zeros(w.shape, dtype=get_float_32_64())
        out_shape = your_grad.shape
        for i in range(out_shape[2]):
            for j in range(out_shape[3]):
                for k in range(num_filters):
                    filter = w[k, :, :, :]
                    chunk = x[:, :, i*stride:i*stride+w_h, j*stride:j*stride+w_w]
                    g_out = your_grad[:, k, i, j].reshape((-1, 1, 1, 1))
                    w_grad[k, :, :, :] += (g_out * chunk).sum(axis=0)
                    x_grad[:, :, i*stride:i*stride+w_h, j*stride:j*stride+w_w] += g_out * filter
        return x_grad, w_grad
register("conv2d", Conv2D)

class MaxPool2d(Function):
    @staticmethod
    def forward(context, x, kernel_size, stride=1):
        batch_size, x_channels, x_h, x_w = x.shape
        out_shape = (batch_size,
                     x_channels,
                     (x_h - kernel_size[0]) // stride + 1,
                     (x_w - kernel_size[1]) // stride + 1)
        out = np.zeros(out_shape, dtype=get_float_32_64())
        for i in range(out_shape[2]):
            for j in range(out_shape[3]):
                chunk = x[:, :, i*stride:i*stride+kernel_size[0], j*stride:j*stride+kernel_size[1]]
                chunk = chunk.reshape((batch_size, x_channels, -1))
                max_indices = np.argmax(chunk, axis=2).reshape(-1)
                max_values = chunk[np.arange(batch_size).repeat(x_channels), np.tile(np.arange(x_channels), batch_size), max_indices]
                out[:, :, i, j] = max_values.reshape(batch_size, x_channels)
                context.save_for_backward(max_indices)
        context.save_for_backward(x)
        context.save_for_backward(stride)
        context.save_for_backward(kernel_size)
        return out

    @staticmethod
    def backward(context, your_grad):
        kernel_size = context.safe.pop()
        stride = context.safe.pop()
        x = context.safe.pop()
        batch_size, x_channels, x_h, x_w = x.shape
        out_shape = your_grad.shape
        parent_grad = np.zeros(x.shape, dtype=get_float_32_64())
        for i in reversed(range(out_shape[2])):
            for j in reversed(range(out_shape[3])):
                max_indices = context.safe.pop()
                chunk = parent_grad[:, :, i*stride:i*stride+kernel_size[0], j*stride:j*stride+kernel_size[1]]
                chunk = chunk.reshape((batch_size, x_channels, -1))
                chunk[np.arange(batch_size).repeat(x_channels), np.tile(np.arange(x_channels), batch_size), max_indices] += your_grad[:, :, i, j].reshape(-1)
                chunk = chunk.reshape((batch_size, x_channels, kernel_size[0], kernel_size[1]))
                parent_grad[:, :, i*stride:i*stride+kernel_size[0], j*stride:j*stride+kernel_size[1]] = chunk
        return (parent_grad,)
register("maxpool2d", MaxPool2d)

class Sigmoid(Function):
    @staticmethod
    def forward(context, x):
        s_x = 1 / (1 + np.exp(-x))
        context.save_for_backward(s_x)
        return s_x

    @staticmethod
    def backward(context, your_grad):
        s_x = context.safe[0]
        return (your_grad * s_x * (1 - s_x),)
register("sigmoid", Sigmoid)

class Tanh(Function):
    @staticmethod
    def forward(context, x):
        t_x = (np.exp(x) - np.exp(-x)) / (np.exp(x) + np.exp(-x))
        context.save_for_backward(t_x)
        return t_x

    @staticmethod
    def backward(context, your_grad):
        t_x = context.safe[0]
        return (your_grad * (1 - np.square(t_x)),)
register("tanh", Tanh)

class Dropout(Function):
    @staticmethod
    def forward(context, x, p=0.5, debug=False):
        if debug:
            np.random.seed(10)
        # Remember to set p = 0 during inference.
        mask = (np.random.uniform(low=0.0, high=1.0, size=x.shape) > p).astype(get_float_32_64())
        mask *= (1 / (1 - p))
        context.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(context, your_grad):
        mask = context.safe[0]
        return (your_grad * mask,)
register("dropout", Dropout)

class Pad(Function):
    @staticmethod
    def forward(context, x, pad, value=0):
        # For how to use this function:
        # https://pytorch.org/docs/stable/generated/torch.nn.functional.pad.html
        m = len(pad)
        assert m == 2 or m == 4 or m == 6 or m == 8
        new_shape = np.array(x.shape)
        for i, val in enumerate(pad):
            index = -1 - i // 2
            new_shape[index] += val
        new_x = np.full(new_shape, value, dtype=x.dtype)
        s = x.shape
        if m == 2:
            new_x[..., pad[0]:pad[0]+s[-1]] = x
        elif m == 4:
            new_x[..., pad[2]:pad[2]+s[-2], pad[0]:pad[0]+s[-1]] = x
        elif m == 6:
            new_x[..., pad[4]:pad[4]+s[-3], pad[2]:pad[2]+s[-2], pad[0]:pad[0]+s[-1]] = x
        elif m == 8:
            new_x[..., pad[6]:pad[6]+s[-4], pad[4]:pad[4]+s[-3], pad[2]:pad[2]+s[-2], pad[0]:pad[0]+s[-1]] = x
        context.save_for_backward(pad)
        context.save_for_backward(s)
        return new_x

    @staticmethod
    def backward(context, your_grad):
        pad, s = context.safe
        m = len(pad)
        if m == 2:
            retval = your_grad[..., pad[0]:pad[0]+s[-1]]
        elif m == 4:
            retval = your_grad[..., pad[2]:pad[2]+s[-2], pad[0]:pad[0]+s[-1]]
        elif m == 6:
            retval = your_grad[..., pad[4]:pad[4]+s[-3], pad[2]:pad[2]+s[-2], pad[0]:pad[0]+s[-1]]
        elif m == 8:
            retval = your_grad[..., pad[6]:pad[6]+s[-4], pad[4]:pad[4]+s[-3], pad[2]:pad[2]+s[-2], pad[0]:pad[0]+s[-1]]
        return (retval,)
register("pad", Pad)

class BatchNorm1D(Function):
    @staticmethod
    def forward(context, x, gamma, beta, eps=1e-8):
        # Normalizes hidden layer inputs so you can increase lr more and speed up learning.
        # Slight regularization effect.
        # Eliminates the need for bias term because that gets removed by mu anyways.
        # Gives layer more robust ground to stand on while layers before train.
        # Makes loss surface less stretched and more round.
        assert len(x.shape) == 2
        mu = x.mean(axis=0)
        var = x.var(axis=0)
        x_norm = (x - mu) / (np.sqrt(var) + eps)
        x_tilde = gamma * x_norm + beta
        context.save_for_backward(x)
        context.save_for_backward(x_norm)
        context.save_for_backward(var)
        context.save_for_backward(eps)
        context.save_for_backward(gamma)
        return x_tilde

    @staticmethod
    def backward(context, your_grad):
        x, x_norm, var, eps, gamma = context.safe
        g_beta = your_grad.sum(axis=0)
        g_gamma = (x_norm * your_grad).sum(axis=0)
        g_x_norm = your_grad * gamma
        # === Written by ChatGPT. Have no idea how it works. ===
        g_var = np.sum(-0.5 * g_x_norm * (x - x.mean(axis=0)) / ((var + eps) ** 1.5), axis=0)
        g_mu = np.sum(-g_x_norm / np.sqrt(var + eps), axis=0)
        g_x = g_x_norm / np.sqrt(var + eps) + 2.0 * (x - x.mean(axis=0)) * g_var / x.shape[0] + g_mu / x.shape[0]
        # === End. ===
        return g_x, g_gamma, g_beta
register("batchnorm1d", BatchNorm1D)

class Cat(Function):
    @staticmethod
    def forward(context, x, y):
        out = np.concatenate((x, y), axis=1)
        context.save_for_backward(x.shape[1])
        return out

    @staticmethod
    def backward(context, your_grad):
        x_len = context.safe[0]
        return your_grad[:, :x_len], your_grad[:, x_len:]
register("cat", Cat)

# This op has not been tested extensively.
class BroadcastTo(Function):
    @staticmethod
    def forward(context, x, shape=None):
        assert len(x.shape) == len(shape)
        context.save_for_backward(x.shape)
        return np.broadcast_to(x, shape)

    @staticmethod
    def backward(context, your_grad):
        x_shape = context.safe[0]
        assert len(x_shape) == len(your_grad.shape)
        retval = your_grad
        for axis in range(len(x_shape)):
            if x_shape[axis] != your_grad.shape[axis]:
                retval = retval.sum(axis=axis, keepdims=True)
        return (retval,)
register("broadcast_to", BroadcastTo)

def get_float_32_64():
    return np.float64 if Tensor.NEED_PRECISION else np.float32


# ---- contract glue: operators and torch method names for the registered ops ----
Tensor.__add__ = Tensor.add
Tensor.__sub__ = Tensor.sub
Tensor.__mul__ = Tensor.mul
Tensor.__truediv__ = Tensor.div
Tensor.__matmul__ = Tensor.matmul
_registered_reshape = Tensor.reshape
Tensor.reshape = lambda self, shape: _registered_reshape(self, shape=shape)  # the op takes shape=
Tensor.max_pool2d = lambda self, k: self.maxpool2d(kernel_size=(k, k), stride=k)  # k x k windows, stride k


def _batch_norm(self, eps=1e-5):
    """batchnorm1d with a constant scale of ones and shift of zeros (the contract has no affine part)."""
    n_features = self.array.shape[1]
    return self.batchnorm1d(Tensor(np.ones(n_features, dtype=self.array.dtype)),
                            Tensor(np.zeros(n_features, dtype=self.array.dtype)), eps=eps)


Tensor.batch_norm = _batch_norm
