# Adapted from https://github.com/soumyadip1995/numgrad, engine.py
# (commit 8f11fdc9244e0baea221cd57b89127f607263346), test data for the grader's corpus.
# (numgrad credits utkuevci's numpy_autograd; the code and licence below are numgrad's.)
#
# What changed for the contract: numpy arrays are torch tensors (np.ones/np.zeros ->
# torch.ones/torch.zeros in float64 as numpy's default, np.dot -> @, np.multiply -> *,
# np.maximum(x, 0) -> torch.clamp(x, min=0), np.sum -> torch.sum; a Python scalar is still
# wrapped as a shape-(1,) tensor); the module functions `add`, `mul`, `dot`, `relu`, `sum`
# and `backward_graph` are also reachable as the methods `__add__`, `__mul__`,
# `__matmul__`, `relu`, `sum` and `backward` (the functions themselves are unchanged; the
# original per-node method `Tensor.backward`, which runs one node's backward_function, is
# renamed `_node_backward` so that `backward` can be the whole pass); the constructor
# takes `requires_grad` (stored; `requires_grad` of a result is a property, true iff one
# of its `prev` requires grad; the engine itself never reads it), so the one positional
# `_op` argument inside `mul` is passed by keyword; `backward(grad=None)` calls
# `backward_graph`, which seeds the output with `grad` when it is given (the original
# always seeds ones). `torch.sum` returns a 0-d tensor, which the original's `np.isscalar`
# branch would have turned into shape (1,): the 0-d result is kept, as the contract asks.
# Kept as in the original: every tensor gets a zero `.grad` at construction and keeps it
# (there is no requires_grad logic); `mean()` returns a new leaf holding 1/size, not the
# mean; leaves are left out of the topological sort; `relu` passes no gradient at x <= 0;
# nothing reduces a broadcast gradient.
#
# Original licence:
#
# MIT License
#
# Copyright (c) 2021 Soumyadip Nandi
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

## Credits to utkuevci

import torch


class Tensor:
    def __init__(self, data, requires_grad=False, _op = '', leaf = True, backward_function = None):

        if backward_function is None and not leaf:
            print("Non-leaf nodes require backward function %r" % data)

        if isinstance(data, (int, float)):
            data = torch.ones(1, dtype=torch.float64)*data
        if type(data) != torch.Tensor:
            print("data should be of type torch.Tensor or a scalar, but received {type(data)}")
        self._requires_grad = requires_grad
        self.leaf = leaf
        self.prev = []
        self.backward_function = backward_function
        self.data = data
        self.zero_grad()

    @property
    def requires_grad(self):
        return bool(self._requires_grad) or any(p.requires_grad for p in self.prev)

    def backward(self, grad=None):
        # contract entry point: the whole pass, as the module function does
        return backward_graph(self, grad)

    def _node_backward(self):
        self.backward_function(dy = self.grad)


    def zero_grad(self):
        self.grad = torch.zeros(self.data.shape, dtype=torch.float64)

    def __str__(self):
        return "Tensor %r with grad %r" % (self.data, self.grad)


    def mean(self):
        div = Tensor(torch.tensor([1/self.data.numel()], dtype=torch.float64))
        return div

    # contract names for the module functions below
    def __add__(self, other):
        return add(self, other)

    def __mul__(self, other):
        return mul(self, other)

    def __matmul__(self, other):
        return dot(self, other)

    def relu(self):
        return relu(self)

    def sum(self):
        return sum(self)

# implement some operations

def add(a,b):
    if not (isinstance(a,Tensor) and isinstance(b,Tensor)):
        print("a, b needs to be a Tensor/scalar")

    def back_func(dy):
        b.grad += dy
        a.grad += dy

    res = Tensor(a.data + b.data, leaf=False, backward_function = back_func)
    res.prev.extend([a,b])
    return res

def dot(a, b):
    if not(isinstance(a, Tensor) and isinstance(b , Tensor)):
        print("a, b needs to be a Tensor")

    def back_func(dy = 1):
        if isinstance(dy, (int, float)):
            dy = torch.ones(1, dtype=torch.float64)*dy

        a.grad += dy @ b.data.T
        b.grad += a.data.T @ dy

    res = Tensor(a.data @ b.data, leaf = False, backward_function = back_func)
    res.prev.extend([a,b])

    return res

def relu(a):
    if not(isinstance(a, Tensor)):
        print("a needs to be a Tensor")

    def back_func(dy = 1):
        a.grad[a.data > 0] += dy[a.data > 0]
    res = Tensor(torch.clamp(a.data, min=0), leaf=False, backward_function = back_func)
    res.prev.append(a)
    return res


def mul(a,b):
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        print("a and b needs to be a Tensor/scalar")

    def back_func(dy):
        if isinstance(dy, (int, float)):
            dy = torch.ones(1, dtype=torch.float64)*dy
        a.grad += dy * b.data
        b.grad += dy * a.data
    res = Tensor(a.data * b.data, _op='*', leaf=False, backward_function=back_func)
    res.prev.extend([a,b])
    return res


def sum(a):
    if not (isinstance(a,Tensor)):
        print('a needs to be a Tensor')
    def back_func(dy = 1):
        a.grad += torch.ones(a.data.shape, dtype=torch.float64)*dy

    res = Tensor(torch.sum(a.data), leaf=False, backward_function = back_func)
    res.prev.append(a)
    return res


def __topo_sort(var):
    vars_seen = set()
    top_sort = []
    def topo_sort_helper(vr):
        if (vr in vars_seen) or vr.leaf:
            pass
        else:
            vars_seen.add(vr)
            for pvar in vr.prev:
                topo_sort_helper(pvar)
            top_sort.append(vr)
    topo_sort_helper(var)
    return top_sort


def backward_graph(var, grad=None):
    if not isinstance(var,Tensor):
        print("var needs to be a Tensor instance")
    tsorted = __topo_sort(var)

    var.grad = torch.ones(var.data.shape, dtype=torch.float64) if grad is None else grad
    for var in reversed(tsorted):
        var._node_backward()
