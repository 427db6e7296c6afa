# Adapted from https://github.com/PABannier/nanograd, nanograd/tensor.py, nanograd/autograd.py,
# nanograd/device.py, nanograd/nn/ops_cpu.py, the size helpers of nanograd/nn/conv_ops.py and,
# for the contract glue, NLLLoss, BatchNorm1d and MaxPool2d/AvgPool2d of nanograd/nn/module.py
# (commit 5acd355c638885cbfc0fd0f1c4903964e7fb7de9), test data for the grader's corpus.
#
# What changed for the contract: the files are one module, CPU only (the PyOpenCL/GPU
# buffer code, `get_gpu_context_and_queue`, `to`/`cpu`/`gpu` and the graphviz plotting are
# left out; `_move_data` keeps only its CPU path); the engine keeps its numpy arrays,
# renamed `array` (was `data`) and `_grad` (was `grad`, a Tensor), and properties `data`
# (read-only) and `grad` (settable to None or a torch tensor) return them as torch tensors
# (copies); a torch tensor given to the constructor arrives as the ndarray it holds;
# register_ops gets the op classes from a namespace built in this module instead of the
# ops_cpu module; `backward(grad=None)` seeds the output with `grad` when it is given
# (then any shape; the original always seeded ones and required shape (1,)); glue for the
# contract's calling conventions: `conv2d(w)` passes stride 1, `reshape(shape)` passes the
# shape by keyword (the registered op takes it as `shape=`),
# `max_pool2d(k)`/`avg_pool2d(k)` turn an int into (k, k) as the original's
# MaxPool2d/AvgPool2d modules do; `cross_entropy(target)` is the original NLLLoss.forward
# applied to `log_softmax()`, and `batch_norm(eps)` is the training-mode body of the
# original BatchNorm1d without running statistics and without its affine weight and bias.
# Kept as in the original: a full `sum()` and `mean()` return shape (1,), not 0-d (on 0-d
# arrays numpy returns scalars, which `_move_data` would turn into float32 arrays);
# ReLU.backward passes the gradient where input >= 0; backward gives a `.grad` to every
# parent that receives a gradient, requiring grad or not (constants and the Python numbers
# that dispatch wraps as shape-(1,) tensors included); Conv2d.forward builds its im2col
# view with a batch stride of C*H*H elements (not C*H*W), so for H != W and a batch of
# more than one image it reads the wrong elements (for H > W, past the end of the input
# buffer); NLLLoss averages over all N*C entries of (log_probs * onehot), not over the N
# samples; `__getitem__` takes slices only; build_graph_topology is functools.lru_cache'd
# on the tensor; the recursive DFS; no no_grad, no `maximum`, no `__rtruediv__`.
#
# Original licence:
#
# Copyright 2020 Pierre-Antoine Bannier
#
# Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files (the "Software"),
# to deal in the Software without restriction, including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense,
# and/or sell copies of the Software, and to permit persons to whom the Software is furnished to do so, subject to the following conditions:
#
# The above copyright notice and this permission notice shall be included in all copies or substantial portions of the Software.
#
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
# FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
# LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
# IN THE SOFTWARE.

from enum import Enum
from types import SimpleNamespace
from typing import Union
from collections import defaultdict
import warnings
import inspect
from functools import partialmethod
import functools

import numpy as np
import torch


# ---- nanograd/device.py ----
class Device(Enum):
    """
        Enumeration of the devices supported by
        Nanograd. 
        Currently, Nanograd only supports CPU and GPU.
    """
    CPU = 1
    GPU = 2


# ---- nanograd/tensor.py ----
cl_ctx, cl_queue = None, None

class Tensor:
    ops = defaultdict(dict) # Adding to the class several operations
    """
        Tensor is the basic operator object of Nanograd. It is 
        a wrapper class around NumPy array. 

        Args:
            data (np.ndarray or int or float or GPUBuffer): Contains data to be stored. It can 
                be a scalar, a vector, a matrix or a tensor (multi-dimensional array).

            requires_grad (bool, optional): If ``True``, a gradient will be stored and 
                accumulated as a property of an object. If ``False``, the grad property 
                remains None. No gradient is stored in the object.

            is_leaf (bool, optional): If ``True``, the corresponding node in the computational
                graph does not have any parents. Note that it is usually the case for parameters
                in a neural network. If ``False``, the node is expected to have parents. 
                Usually a non-leaf node results from a basic operation.

            is_parameter (bool, optional): the Tensor contains trainable parameters. It is useful
                when building a neural network.

            device (Device, optional): the device to use for computations. Currently, Nanograd only
                supports CPU and GPU.

            name (str, optional): A name for the Tensor for visualization purposes.

            op (str, optional): The operation used to create the tensor. Could be an addition, a substraction,
                a product.

        ..note::
            If the node is gradient-enabled, the grad property is populated with a gradient Tensor
            object during backpropagation.
    """
    def __init__(self, 
                 data:Union[np.ndarray, torch.Tensor], 
                 requires_grad:bool=False, 
                 is_parameter:bool=False,
                 device:Device=Device.CPU,
                 name:str='no_name',
                 op:str=None) -> None:
        if isinstance(data, torch.Tensor):
            data = data.numpy()  # contract boundary: a torch tensor arrives as the ndarray it holds
        self.array = self._move_data(data, device)
        self.requires_grad = requires_grad
        self.is_parameter = is_parameter

        self.device = device

        self._grad = None
        self.ctx = None

        self.name, self.op = name, op
        self.children = []
    
    @property
    def shape(self) -> tuple:
        return self.array.shape
    
    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    # ---- contract: torch copies of the numpy storage ----
    @property
    def data(self) -> torch.Tensor:
        return torch.from_numpy(np.array(self.array))

    @property
    def grad(self):
        return None if self._grad is None else torch.from_numpy(np.array(self._grad.array))

    @grad.setter
    def grad(self, value):
        self._grad = None if value is None else Tensor(np.asarray(value), requires_grad=False)

    @property
    def T(self):
        return self.transpose()
    
    # ****************************************
    # ***** Class methods / Initializers *****
    # ****************************************

    @classmethod
    def zeros(cls, *shape, **kwargs):
        """Creates a Tensor filled with zeros"""
        return cls(np.zeros(*shape, dtype=np.float32), **kwargs)
    
    @classmethod
    def ones(cls, *shape, **kwargs):
        """Creates a Tensor filled with ones"""
        return cls(np.ones(*shape, dtype=np.float32), **kwargs)
    
    @classmethod
    def arange(cls, *interval, **kwargs):
        """Creates a Tensor filled with values in range"""
        return cls(np.arange(*interval).astype(np.float32), **kwargs)
    
    @classmethod
    def randn(cls, *shape, **kwargs):
        """
            Creates a Tensor filled with values drawn from the
            standard Gaussian distribution
        """
        return cls(np.random.randn(*shape).astype(np.float32), **kwargs)
    
    @classmethod
    def normal(cls, loc, scale, *shape, **kwargs):
        """
            Creates a Tensor filled with values drawn from the
            a custom Gaussian distribution
        """
        return cls(np.random.normal(loc, scale, *shape).astype(np.float32), **kwargs)

    @classmethod
    def randint(cls, low, high, *shape, **kwargs):
        """
            Creates a Tensor filled with integer values drawn in the
            range between low and high
        """
        return cls(np.random.randint(low, high, *shape).astype(np.float32), **kwargs)
    
    @classmethod
    def eye(cls, dim, **kwargs):
        """
            Creates a 2-dimensional Tensor (matrix) equal to the
            identity matrix.
        """
        return cls(np.eye(dim).astype(np.float32), **kwargs)
    
    # ****************************************
    # *********** CPU/GPU support ************
    # ****************************************

    @staticmethod
    def _move_data(data:np.ndarray, device:Device):
        """
            Moves data to the device specified

            Args:
                data (np.ndarray): data to be moved
                device (Device): the destination device

            Returns:
                data (np.ndarray): numpy array (CPU only in this adaptation)
        """
        assert device in Device, "Unsupported device. Only CPU and GPU available."

        if not isinstance(data, np.ndarray):
            data = np.array(data, dtype=np.float32)

        return data

    # ****************************************
    # *************** Backprop ***************
    # ****************************************

    @functools.lru_cache()
    def build_graph_topology(self):
        def dfs(node, visited, nodes):
            visited.add(node)
            if node.ctx:
                for parent in node.ctx.parents:
                    if parent not in visited:
                        dfs(parent, visited, nodes)
                nodes.append(node)
            return nodes
        return dfs(self, set(), list())
        
    def backward(self, grad=None):
        if self.shape != (1,) and grad is None:
            raise Exception("Can't initiate backprop from a non scalar-valued tensor.")

        self._grad = Tensor.ones(self.shape, device=self.device, requires_grad=False) if grad is None else \
            Tensor(grad, device=self.device, requires_grad=False)

        for node in reversed(self.build_graph_topology()):
            assert node._grad is not None, 'Got an unitialized gradient node'

            gradients = node.ctx.backward(node.ctx, node._grad.array)

            if len(node.ctx.parents) == 1:
                gradients = [gradients]
            
            for tensor, grad in zip(node.ctx.parents, gradients):
                if grad is not None: 
                    assert grad.shape == tensor.shape, f"Mismatched tensor and grad shape. Got {grad.shape} and {tensor.shape}. \
                                                         Tensor and gradient should have the same shape."
                    if tensor._grad is None:
                        tensor._grad = Tensor(grad, device=self.device, requires_grad=False)
                    else:
                        tensor._grad += Tensor(grad, device=self.device, requires_grad=False)

    def copy(self):
        """Creates a copy of the tensor"""
        return Tensor(self.array, device=self.device)

    def __str__(self):
        return f"<NanoTensor({str(self.array)}, " + \
               f"name={self.name}," + \
               f"device={self.device}>"
    
    def __repr__(self):
        return self.__str__()

    def __getitem__(self, args):
        if args is None: 
            args = []
        elif type(args) in [list, tuple]: 
            pass
        else: 
            args = [args]

        indices = []

        for i, arg in enumerate(args):
            start, stop = arg.start, arg.stop

            if start is None:
                start = 0
            elif not np.issubdtype(type(start), int):
                raise TypeError(f"Indices must be integer. Got {type(start)}")
            
            if stop is None:
                stop = self.shape[i]
            elif not np.issubdtype(type(stop), int):
                raise TypeError(f"Indices must be integer. Got {type(stop)}")
            elif stop < 0:
                stop = self.shape[i] + stop

            assert arg.step is None or arg.step == 1, "Custom step not yet implemented"
            indices.append((start, stop))
        
        indices += [(0, shape[i]) for i in range(len(args), len(self.shape))]
        
        return self.slice(indices=indices)

    # ****************************************
    # ********** Basic operations ************
    # ****************************************
    
    def __truediv__(self, other):
        return self * (other ** -1.0)

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return -self + other

    def sqrt(self):
        return self ** 0.5
    
    # ****************************************
    # ******** Reduction operations **********
    # ****************************************
    
    def mean(self, axis=None):
        out = self.sum(axis=axis)
        coeff = np.prod(out.shape) / np.prod(self.shape)
        return out * coeff

    # ****************************************
    # ****** Miscellaneous operations ********
    # ****************************************

    def flatten(self):
        dim1, dim2 = self.shape[0], np.prod(self.shape[1:])
        out = self.reshape(shape=(dim1, dim2))
        return out

    # ****************************************
    # ******** Activation functions **********
    # ****************************************
    
    def log_softmax(self):
        batch_size, num_classes = self.shape
        a = self.max(axis=1).reshape(shape=[batch_size, 1]) # Log-exp trick
        out = self - a - (self - a).exp().sum(axis=1).log().reshape(shape=[batch_size, 1])
        return out

    # ****************************************
    # ********* Pool operations *********
    # ****************************************

    def _pool1d(self, field_length:int):
        """1-dimensional pooling operation

        Args:
            field_length (int): length of the pooling kernel
        
        Returns:
            x_reshaped (Tensor): pooled Tensor
        """
        x_unpadded = self[:, :, :self.shape[2] - self.shape[2] % field_length]

        shape = (x_unpadded.shape[0], x_unpadded.shape[1], 
                 x_unpadded.shape[2] // field_length, field_length)

        x_reshaped = x_unpadded.reshape(shape=shape)
        return x_reshaped 
    
    def max_pool1d(self, kernel_size:int=2):
        """MaxPooling1d operation

        Args:
            kernel_size (int, optional): Kernel length for pooling operation. Defaults to 2.
        """
        return self._pool1d(kernel_size).max(axis=3)
    
    def avg_pool1d(self, kernel_size:int=2):
        """AvgPooling1d operation

        Args:
            kernel_size (int, optional): Kernel length for pooling operation. Defaults to 2.
        """
        return self._pool1d(kernel_size).mean(axis=3)
        
    def _pool2d(self, pool_size:tuple):
        """
            2-dimensional pooling operation

            Args:
                pool_size (tuple): height of the pooling kernel
            
            Returns:
                x_reshaped (Tensor): pooled Tensor
        """
        x_unpadded = self[:, :, 
            :self.shape[2] - self.shape[2] % pool_size[0], 
            :self.shape[3] - self.shape[3] % pool_size[1]]
        
        shape = (x_unpadded.shape[0], x_unpadded.shape[1], 
                 x_unpadded.shape[2] // pool_size[0], pool_size[0], 
                 x_unpadded.shape[3] // pool_size[1], pool_size[1])

        x_reshaped = x_unpadded.reshape(shape=shape)

        return x_reshaped
    
    def max_pool2d(self, pool_size:tuple=(2, 2)):
        """MaxPooling2d operation
        
            Args:
                kernel_size (tuple): Kernel length for pooling operation
        """
        return self._pool2d(pool_size).max(axis=(3, 5))
    
    def avg_pool2d(self, pool_size:tuple=(2, 2)):
        """AvgPooling2d operation
        
            Args:
                kernel_size (tuple): Kernel length for pooling operation
        """
        return self._pool2d(pool_size).mean(axis=(3, 5))

    def pad1d(self, pad:tuple):
        """Padding for one-dimensional signal

        Args:
            pad (tuple): Amount of padding before and after the signal

        Returns:
            Tensor: Padded signal
        """
        return self[:, :, -pad[0]:int(self.shape[2])+pad[1]]

    def pad2d(self, pad:tuple):
        """Padding for two-dimensional images

        Args:
            pad (tuple): 4-dimensional tuple. Amount of padding to be applied before and
                         after the signal along 2 dimensions

        Returns:
            Tensor: Padded signal
        """
        return self[:, :, -pad[2]:int(self.shape[2])+pad[3], -pad[0]:int(self.shape[3])+pad[1]]


def register(name, operation, device=Device.CPU):
    """Registers operation to the Tensor class

       More precisely, it populates the ops dictionary by adding CPU and 
       GPU operations.

       In short:
            ops[device][name] = function

    Args:
        name (str): Key representing the function stored in the ops dictionary
        function (class, inherits from Function): Value in the dictionary
        device ([type], optional): The device on which the operation is execute. Defaults to Device.CPU.
    """

    Tensor.ops[device][name] = operation
    
    def dispatch(*args, **kwargs):
        """Modifies the operation arguments and adds the operation 
           to the ops dictionary

        Returns:
            function: Forward pass (apply) of the operation
        """
        input = [arg for arg in args if isinstance(arg, Tensor)][0]
        args = [Tensor(np.array([arg], dtype=input.dtype), device=input.device) 
                if not isinstance(arg, Tensor) else arg for arg in args]
        
        op = Tensor.ops[input.device][name]
        op.cl_ctx, op.cl_queue, op.device = cl_ctx, cl_queue, input.device # For GPU support
        return op.apply(op, *args, **kwargs)

    if name in ['add', 'mul', 'pow', 'matmul', 'neg']:
        setattr(Tensor, f"__{name}__", dispatch)
        if name != 'neg':
            setattr(Tensor, f"__r{name}__", lambda self, x: dispatch(x, self))
    else:
        setattr(Tensor, name, dispatch)


def register_ops(namespace, device=Device.CPU):
    for name, cls in inspect.getmembers(namespace, inspect.isclass):
        if name[0] != "_":  
            register(name.lower(), cls, device=device)


# ---- nanograd/autograd.py ----
class Function:
    """
        Superclass for linking nodes to the computational graph.

        Raises:
            NotImplementedError: All subclasses must have a forward and 
            backward function implemented
    """
    def __init__(self, *tensors):
        self.parents = tensors
        self.saved_tensors = []
    
    def save_for_backward(self, *args):
        self.saved_tensors.extend(args)
    
    def apply(self, *args, **kwargs):
        ctx = self(*args)

        params = inspect.signature(self.forward).parameters

        for p in params.values():
            if p.default is not p.empty:
                setattr(ctx, p.name, p.default)
        
        for k, v in kwargs.items():
            setattr(ctx, k, v)

        
        out = self.forward(ctx, *[t.array for t in args], **kwargs)
        ret = Tensor(out, device=ctx.device, requires_grad=any([t.requires_grad for t in args]))
        
        if ret.requires_grad:
            ret.ctx = ctx
        
        return ret


# ---- nanograd/nn/conv_ops.py (the output-size helpers) ----
def get_conv1d_output_size(input_length:int, 
                           kernel_size:int, 
                           stride:int, 
                           padding:int) -> int:
    """Computes the output size of a 1d convolution.

    Args:
        input_length (int): Length of the sequence
        kernel_size (int): Spatial size of the kernel
        stride (int): Stride of the convolution
        padding (int): Spacing between kernel elements

    Returns:
        int: Output size
    """
    input_length += 2 * padding
    return int((input_length - kernel_size) // stride + 1)

def get_conv2d_output_size(input_height:int, input_width:int, 
                           kernel_size:int, stride:int, 
                           padding:int) -> tuple:
    """Computs the output size of a 2d convolution.

    Args:
        input_height (int): Height of the input tensor
        input_width (int): Width of the input tensor
        kernel_size (int): Square size of the kernel
        stride (int): Stride of te convolution
        padding (int): zero-padding added to both sides of the input

    Returns:
        tuple: output height and output width
    """
    input_height += 2 * padding
    input_width += 2 * padding

    output_height = (input_height - kernel_size[0]) // stride + 1
    output_width = (input_width - kernel_size[1]) // stride + 1
    return int(output_height), int(output_width)


# ---- nanograd/nn/ops_cpu.py ----
# *************************************
# ************** Helpers **************
# *************************************

def sigmoid(x:np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))

def unbroadcast(grad:np.ndarray, shape:tuple, to_keep:int=0) -> np.ndarray:
    while len(grad.shape) != len(shape):
        grad = grad.sum(axis=0)
    for i in range(len(shape) - to_keep):
        if grad.shape[i] != shape[i]:
            grad = grad.sum(axis=i, keepdims=True)
    return grad

def inner_slice(a, indices):
    """
        Helper function to slice a Tensor

        Args:
            a (np.ndarray): array to slice
            indices (list): list of indices 
        
        ..note: Length must match the number of dimensions of x
    """
    padding = [(max(0, -p[0]), max(0, p[1]-a.shape[i])) for i, p in enumerate(indices)]
    a = np.pad(a, padding, mode="constant")
    slices = [(p[0]+padding[i][0], p[1]+padding[i][0]) for i, p in enumerate(indices)]
    return a[tuple([slice(x[0], x[1], None) for x in slices])]

# *************************************
# *********** Forward passes **********
# *************************************

class OneHot(Function):
    @staticmethod
    def forward(ctx, input, num_classes):
        idx = input.astype(int)
        out = np.zeros((idx.shape[0], num_classes))
        out[np.arange(len(out)), idx] = 1
        return out
    
    @staticmethod
    def backward(ctx, grad_output):
        raise NotImplementedError


class Unsqueeze(Function):
    @staticmethod
    def forward(ctx, input, axis):
        ctx.save_for_backward(axis)
        return np.expand_dims(input, axis)
    
    @staticmethod
    def backward(ctx, grad_output):
        axis = ctx.saved_tensors[0]
        return grad_output.squeeze(axis)


class Squeeze(Function):
    @staticmethod
    def forward(ctx, input, axis):
        ctx.save_for_backward(axis)
        return np.squeeze(input, axis)
    
    @staticmethod
    def backward(ctx, grad_output):
        axis = ctx.saved_tensors
        return np.expand_dims(grad_output, axis)


class Slice(Function):
    @staticmethod
    def forward(ctx, input, indices):
        ctx.save_for_backward(input.shape, indices)
        return inner_slice(input, indices)
    
    @staticmethod
    def backward(ctx, grad_output):
        shape, indices = ctx.saved_tensors
        indices = [(0 - p[0], grad_output.shape[i] + (shape[i] - p[1])) for i, p in enumerate(indices)]
        return inner_slice(grad_output, indices)


class Transpose(Function):
    @staticmethod
    def forward(ctx, input):
        return input.T
    
    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.T


class Reshape(Function):
    @staticmethod
    def forward(ctx, input, shape):
        ctx.save_for_backward(input.shape)
        return input.reshape(shape)

    @staticmethod
    def backward(ctx, grad_output):
        shape = ctx.saved_tensors[0]
        return grad_output.reshape(shape)


class Max(Function):
    @staticmethod
    def forward(ctx, input, axis):
        axis = [axis] if isinstance(axis, int) else axis
        out = np.amax(input, axis=None if axis is None else tuple(axis), keepdims=True)
        ctx.save_for_backward(input, axis, out)
        if axis is not None:
            out = out.reshape([input.shape[i] for i in range(len(input.shape)) if i not in axis])
        return out
    
    @staticmethod
    def backward(ctx, grad_output):
        input, axis, out = ctx.saved_tensors
        shape = [1 if axis is None or i in axis else input.shape[i] for i in range(len(input.shape))]
        ret2 = (input == out.reshape(shape))
        div = ret2.sum(axis=None if axis is None else tuple(axis), keepdims=True) 
        return ret2 * (grad_output.reshape(shape)).data / div

    
class Min(Function):
    @staticmethod
    def forward(ctx, input, axis):
        axis = [axis] if isinstance(axis, int) else axis
        out = np.amin(input, axis=None if axis is None else tuple(axis), keepdims=True)
        ctx.save_for_backward(input, axis, out)
        if axis is not None:
            out = out.reshape([input.shape[i] for i in range(len(input.shape)) if i not in axis])
        return out
    
    @staticmethod
    def backward(ctx, grad_output):
        input, axis, out = ctx.saved_tensors
        shape = [1 if axis is None or i in axis else input.shape[i] for i in range(len(input.shape))]
        ret2 = (input == out.reshape(shape))
        div = ret2.sum(axis=None if axis is None else tuple(axis), keepdims=True) 
        return ret2 * (grad_output.reshape(shape)).data / div


class Sum(Function):
    @staticmethod
    def forward(ctx, input, axis=None):
        ctx.save_for_backward(input, axis)
        if axis is None:
            return np.array([input.sum()])
        return input.sum(axis=axis)
    
    @staticmethod
    def backward(ctx, grad_output):
        input, axis = ctx.saved_tensors
        axis = [axis] if type(axis) == int else axis
        shape = [1 if axis is None or i in axis else input.shape[i] for i in range(len(input.shape))]
        return grad_output.reshape(shape) + np.zeros_like(input) # Useful for broadcasting


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a.shape, b.shape)
        return a + b
    
    @staticmethod
    def backward(ctx, grad_output):
        a_shape, b_shape = ctx.saved_tensors
        grad_a = grad_output * np.ones(a_shape)
        grad_b = grad_output * np.ones(b_shape)
        return unbroadcast(grad_a, a_shape), unbroadcast(grad_b, b_shape)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        grad_a = grad_output * b
        grad_b = grad_output * a
        return unbroadcast(grad_a, a.shape), unbroadcast(grad_b, b.shape)


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a @ b
    
    @staticmethod
    def backward(ctx, grad_output):
        a, b = ctx.saved_tensors
        grad_a = grad_output @ b.T
        grad_b = a.T @ grad_output
        return grad_a, grad_b


class Log(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return np.log(input)
    
    @staticmethod
    def backward(ctx, grad_output):
        input = ctx.saved_tensors[0]
        return grad_output / input


class Exp(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return np.exp(input)

    @staticmethod
    def backward(ctx, grad_output):
        input = ctx.saved_tensors[0]
        return grad_output * np.exp(input)


class Neg(Function):
    @staticmethod
    def forward(ctx, input):
        return -input
    
    @staticmethod
    def backward(ctx, grad_output):
        return -grad_output


class Pow(Function):
    @staticmethod
    def forward(ctx, input, power):
        ctx.save_for_backward(input, power)
        return input ** power

    @staticmethod
    def backward(ctx, grad_output):
        input, power = ctx.saved_tensors
        return unbroadcast(power * (input ** (power-1.0)) * grad_output, input.shape), \
               unbroadcast((input ** power) * np.log(input) * grad_output, power.shape)


class ReLU(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return np.maximum(input, 0)
    
    @staticmethod
    def backward(ctx, grad_output):
        input = ctx.saved_tensors[0]
        return (input >= 0) * grad_output


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return sigmoid(input)
    
    @staticmethod
    def backward(ctx, grad_output):
        input = ctx.saved_tensors[0]
        return grad_output * sigmoid(input) * (1 - sigmoid(input))


class Tanh(Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return np.tanh(input)
    
    @staticmethod
    def backward(ctx, grad_output):
        input = ctx.saved_tensors[0]
        return grad_output * (1 - np.power(np.tanh(input), 2))


class Conv1d(Function):
    @staticmethod
    def forward(ctx, input, weight, stride):
        if not isinstance(stride, int):
            stride = int(stride[0])
        batch_size, in_channel, signal_length = input.shape
        num_filters, _, kernel_length = weight.shape
        output_length = get_conv1d_output_size(signal_length, kernel_length, stride, 0)

        ctx.save_for_backward(input, weight, stride)

        stride_shape = (signal_length, 1, in_channel * signal_length, stride)
        strides = input.data.itemsize * np.array(stride_shape)

        cols = np.lib.stride_tricks.as_strided(
            x=input,
            strides=strides,
            shape=(in_channel, kernel_length, batch_size, output_length),
            writeable=False
        )

        cols = cols.transpose(2, 0, 1, 3)
        weight = weight.transpose(1, 2, 0) 

        ret = np.tensordot(cols, weight, axes=[(1, 2), (0, 1)])
        ret = ret.transpose(0, 2, 1)

        ctx.save_for_backward(cols.transpose(0, 1, 3, 2))
        return ret

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, stride, input_reshaped = ctx.saved_tensors

        batch_size, in_channel, signal_length = input.shape
        num_filters, _, kernel_length = weight.shape
        _, _, output_length = grad_output.shape

        #grad_weight = np.einsum('ikX, ijXx -> kjx', grad_output, x_reshaped) SLOWER than using tensordot
        grad_weight = np.tensordot(grad_output, input_reshaped, axes=[(0, 2), (0, 2)])

        grad_x = np.zeros((batch_size, in_channel, signal_length), dtype=grad_output.dtype)

        for k in range(output_length):
            X = k % output_length
            iX = X * stride

            #grad_x[:, :, iX:iX+kernel_length] += np.einsum('ik, kjy->ijy', grad_output[:, :, X], weight) #SLOWER than using tensordot
            grad_x[:, :, iX:iX+kernel_length] += np.tensordot(grad_output[:, :, X], weight, axes=[(1), (0)])
        
        grad_x = grad_x.reshape((batch_size, in_channel, signal_length))

        return grad_x, grad_weight


class Conv2d(Function):
    @staticmethod
    def forward(ctx, input, weight, stride):
        if not isinstance(stride, int):
            stride = int(stride[0])
        batch_size, in_channel, im_height, im_width = input.shape
        num_filters, _, kernel_height, kernel_width = weight.shape
        output_height, output_width = get_conv2d_output_size(im_height, im_width, (kernel_height, kernel_width), stride, 0)

        ctx.save_for_backward(weight, stride)

        strides = (im_height * im_width, im_width, 1, in_channel * im_height * im_height, stride * im_width, stride)
        strides = input.itemsize * np.array(strides)

        cols = np.lib.stride_tricks.as_strided(
            x=input,
            shape=(in_channel, kernel_height, kernel_width, batch_size, output_height, output_width),
            strides=strides,
            writeable=False
        )

        cols = cols.transpose(3, 0, 1, 2, 4, 5)
        weight = weight.transpose(1, 2, 3, 0)

        #jiyxYX,iyxk -> jYXk -> jkYX
        ret = np.tensordot(cols, weight, axes=[(1, 2, 3), (0, 1, 2)])
        ret = ret.transpose(0, 3, 1, 2)

        ctx.save_for_backward(input, cols.transpose(0, 1, 4, 5, 2, 3))

        return ret
    
    @staticmethod
    def backward(ctx, grad_output):
        weight, stride, input, input_reshaped = ctx.saved_tensors

        batch_size, in_channel, im_height, im_width = input.shape
        num_filters, _, kernel_height, kernel_width = weight.shape
        _, _, output_height, output_width = grad_output.shape
        
        #grad_weight = np.einsum('ikYX, ijYXyx -> kjyx', grad_output, x_reshaped) SLOWER than using tensordot 
        grad_weight = np.tensordot(grad_output, input_reshaped, axes=[(0,2,3),(0,2,3)])

        grad_x = np.zeros((batch_size, in_channel, im_height, im_width), dtype=grad_output.dtype)

        for k in range(output_height * output_width):
            X, Y = k % output_width, k // output_width
            iX, iY = X * stride, Y * stride

            # grad_x[:,:, iY:iY+kernel_height, iX:iX+kernel_width] += np.einsum('ik,kjyx->ijyx', grad_output[:,:,Y,X], weight) 
            # SLOWER than using tensordot
            grad_x[:,:, iY:iY+kernel_height, iX:iX+kernel_width] += np.tensordot(grad_output[:,:,Y,X], weight, axes=[(1), (0)])

        grad_x = grad_x.reshape((batch_size, in_channel, im_height, im_width))

        return grad_x, grad_weight

# ---- registration, as at the end of nanograd/tensor.py (CPU ops only) ----
# register_ops walks the classes of the ops_cpu module (getmembers also finds the
# Function it imports); here those classes live in this module, so they are gathered in a
# namespace first.
ops_cpu = SimpleNamespace(**{name: cls for name, cls in list(globals().items())
                             if inspect.isclass(cls) and (cls is Function or issubclass(cls, Function))})
register_ops(ops_cpu)
PYOPENCL_AVAILABLE = False


# ---- contract glue ----
# conv2d: the registered op takes (weight, stride); the contract's conv2d(w) has stride 1.
_registered_conv2d = Tensor.conv2d


def _conv2d(self, weight, stride=1):
    return _registered_conv2d(self, weight, stride)


Tensor.conv2d = _conv2d

# reshape: the registered op takes its shape as a keyword (`reshape(shape=...)`, as the
# original calls it); a positional shape would be wrapped as a constant Tensor by dispatch.
_registered_reshape = Tensor.reshape


def _reshape(self, shape):
    return _registered_reshape(self, shape=shape)


Tensor.reshape = _reshape

# pooling: an int kernel becomes (k, k), as nn.module.MaxPool2d / AvgPool2d do.
_max_pool2d, _avg_pool2d = Tensor.max_pool2d, Tensor.avg_pool2d
Tensor.max_pool2d = lambda self, pool_size=(2, 2): _max_pool2d(
    self, pool_size if isinstance(pool_size, tuple) else (pool_size, pool_size))
Tensor.avg_pool2d = lambda self, pool_size=(2, 2): _avg_pool2d(
    self, pool_size if isinstance(pool_size, tuple) else (pool_size, pool_size))


def _cross_entropy(self, target):
    """nn.module.NLLLoss.forward applied to self.log_softmax(), the original's classifier loss."""
    log_probs = self.log_softmax()
    batch_size, num_classes = log_probs.shape
    labels = Tensor(np.asarray(target)).onehot(num_classes=num_classes)
    return -(log_probs * labels).mean()


def _batch_norm(self, eps=1e-5):
    """nn.module.BatchNorm1d in training mode, without its running statistics and its affine weight/bias."""
    batch_mean = self.mean(0)
    batch_var = ((self - batch_mean.reshape(shape=[1, -1])) ** 2).mean(0)
    return (self - batch_mean.reshape(shape=[1, -1])) / (batch_var + eps).sqrt().reshape(shape=[1, -1])


Tensor.cross_entropy = _cross_entropy
Tensor.batch_norm = _batch_norm
