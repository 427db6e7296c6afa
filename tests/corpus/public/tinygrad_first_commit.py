# Adapted from https://github.com/tinygrad/tinygrad (then geohot/tinygrad), tinygrad/tensor.py
# at commit f4e0cb5945f9327e0b2d3aac54d94f84081d8676 (2020-10-18, "refactor tinygrad to be
# more tiny"), the first days of tinygrad; test data for the grader's corpus.
#
# What changed for the contract: numpy arrays are torch tensors; `Tensor(data,
# requires_grad=False)` with a result requiring grad iff a parent does (the original has
# no requires_grad: backward only descends into tensors that require grad here);
# `__add__`, `__mul__`, `__matmul__` are registered next to `add`, `mul`, `dot`; `sum`
# returns a 0-d result (the original: shape (1,)) and `mean` a 0-d factor to match;
# `backward(grad=None)`; LogSoftmax is left out. Kept as in the original: backward recurses
# into each parent at once (no topological order) and *assigns* `t.grad = g`; ReLU zeroes
# the gradient only where input < 0.
#
# Original licence:
#
# Copyright (c) 2020 George Hotz
# 
# Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files (the "Software"), to deal in the Software without restriction, including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is furnished to do so, subject to the following conditions:
# 
# The above copyright notice and this permission notice shall be included in all copies or substantial portions of the Software.
# 
# THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

# inspired by https://github.com/karpathy/micrograd/blob/master/micrograd/engine.py
from functools import partialmethod
import torch

# **** start with two base classes ****

class Tensor:
  def __init__(self, data, requires_grad=False):
    #print(type(data), data)
    if type(data) != torch.Tensor:
      print("error constructing tensor with %r" % data)
      assert(False)
    self.data = data
    self.grad = None
    self.requires_grad = requires_grad

    # internal variables used for autograd graph construction
    self._ctx = None

  def __str__(self):
    return "Tensor %r with grad %r" % (self.data, self.grad)

  def backward(self, allow_fill=True):
    #print("running backward on", self)
    if self._ctx is None:
      return

    if isinstance(allow_fill, torch.Tensor):
      self.grad = allow_fill
    elif self.grad is None and allow_fill:
      # fill in the first grad with one
      # this is "implicit gradient creation"
      assert self.data.numel() == 1
      self.grad = torch.ones_like(self.data)

    assert(self.grad is not None)

    grads = self._ctx.backward(self._ctx, self.grad)
    if len(self._ctx.parents) == 1:
      grads = [grads]
    for t,g in zip(self._ctx.parents, grads):
      if not t.requires_grad:
        continue
      if g.shape != t.data.shape:
        print("grad shape must match tensor shape in %r, %r != %r" % (self._ctx, g.shape, t.data.shape))
        assert(False)
      t.grad = g
      t.backward(False)

  def mean(self):
    div = Tensor(torch.tensor(1/self.data.numel(), dtype=self.data.dtype))
    return self.sum().mul(div)

# The Function is the Context
class Function:
  def __init__(self, *tensors):
    self.parents = tensors
    self.saved_tensors = []

  def save_for_backward(self, *x):
    self.saved_tensors.extend(x)

  # note that due to how partialmethod works, self and arg are switched
  def apply(self, arg, *x):
    ctx = arg(self, *x)
    ret = Tensor(arg.forward(ctx, self.data, *[t.data for t in x]))
    if any(t.requires_grad for t in ctx.parents):
      ret.requires_grad = True
      ret._ctx = ctx
    return ret

def register(name, fxn, *aliases):
  for n in (name,) + aliases:
    setattr(Tensor, n, partialmethod(fxn.apply, fxn))

# **** implement a few functions ****

class Mul(Function):
  @staticmethod
  def forward(ctx, x, y):
    ctx.save_for_backward(x, y)
    return x*y

  @staticmethod
  def backward(ctx, grad_output):
    x,y = ctx.saved_tensors
    return y*grad_output, x*grad_output
register('mul', Mul, '__mul__')

class Add(Function):
  @staticmethod
  def forward(ctx, x, y):
    return x+y

  @staticmethod
  def backward(ctx, grad_output):
    return grad_output, grad_output
register('add', Add, '__add__')

class ReLU(Function):
  @staticmethod
  def forward(ctx, input):
    ctx.save_for_backward(input)
    return torch.clamp(input, min=0)

  @staticmethod
  def backward(ctx, grad_output):
    input, = ctx.saved_tensors
    grad_input = grad_output.clone()
    grad_input[input < 0] = 0
    return grad_input
register('relu', ReLU)

class Dot(Function):
  @staticmethod
  def forward(ctx, input, weight):
    ctx.save_for_backward(input, weight)
    return input.matmul(weight)

  @staticmethod
  def backward(ctx, grad_output):
    input, weight = ctx.saved_tensors
    grad_input = grad_output.matmul(weight.T)
    grad_weight = grad_output.T.matmul(input).T
    return grad_input, grad_weight
register('dot', Dot, '__matmul__')

class Sum(Function):
  @staticmethod
  def forward(ctx, input):
    ctx.save_for_backward(input)
    return input.sum()

  @staticmethod
  def backward(ctx, grad_output):
    input, = ctx.saved_tensors
    return grad_output * torch.ones_like(input)
register('sum', Sum)
