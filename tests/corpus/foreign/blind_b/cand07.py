# -*- coding: utf-8 -*-
"""
Small autograd engine.

Each Tensor keeps a list of (parent) Tensors and a function that maps the
gradient of the output to the gradients of the parents.  backward() orders the
graph so that a node is processed only after everything that uses it.
"""
import torch


def _as_tensor(x, like):
    if isinstance(x, Tensor):
        return x
    return Tensor(torch.tensor(x, dtype=like.data.dtype))


def _unbroadcast(grad, shape):
    # sum over the axes that were added / expanded by broadcasting
    ndiff = grad.dim() - len(shape)
    for _ in range(ndiff):
        grad = grad.sum(0)
    for i in range(len(shape)):
        if shape[i] == 1 and grad.shape[i] != 1:
            grad = grad.sum(i, keepdim=True)
    return grad


class Tensor(object):

    def __init__(self, data, requires_grad=False):
        super(Tensor, self).__init__()
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = []
        self._backward_fn = None

    def __repr__(self):
        return "Tensor(%s, requires_grad=%s)" % (self.data, self.requires_grad)

    def _result(self, data, parents, backward_fn):
        out = Tensor(data)
        for p in parents:
            if p.requires_grad:
                out.requires_grad = True
        if out.requires_grad:
            out._parents = parents
            out._backward_fn = backward_fn
        return out

    # ------------------------------------------------------------------
    def __add__(self, other):
        other = _as_tensor(other, self)
        sa = self.data.shape
        sb = other.data.shape

        def backward_fn(grad):
            return [_unbroadcast(grad, sa), _unbroadcast(grad, sb)]
        return self._result(self.data + other.data, [self, other], backward_fn)

    def __radd__(self, other):
        return self.__add__(other)

    def __mul__(self, other):
        other = _as_tensor(other, self)
        a = self.data
        b = other.data

        def backward_fn(grad):
            return [_unbroadcast(grad * b, a.shape), _unbroadcast(grad * a, b.shape)]
        return self._result(a * b, [self, other], backward_fn)

    def __rmul__(self, other):
        return self.__mul__(other)

    def __matmul__(self, other):
        a = self.data
        b = other.data

        def backward_fn(grad):
            return [grad.mm(b.t()), a.t().mm(grad)]
        return self._result(a.mm(b), [self, other], backward_fn)

    def relu(self):
        mask = self.data > 0

        def backward_fn(grad):
            return [grad * mask]
        return self._result(self.data.clamp(min=0), [self], backward_fn)

    def sum(self):
        shape = self.data.shape

        def backward_fn(grad):
            return [grad.expand(shape)]
        return self._result(self.data.sum(), [self], backward_fn)

    # ------------------------------------------------------------------
    def __neg__(self):
        return self._result(-self.data, [self], lambda grad: [-grad])

    def __sub__(self, other):
        return self + (-_as_tensor(other, self))

    def __rsub__(self, other):
        return _as_tensor(other, self) + (-self)

    def __truediv__(self, other):
        other = _as_tensor(other, self)
        a = self.data
        b = other.data

        def backward_fn(grad):
            return [_unbroadcast(grad / b, a.shape), _unbroadcast(-grad * a / (b * b), b.shape)]
        return self._result(a / b, [self, other], backward_fn)

    def __rtruediv__(self, other):
        return _as_tensor(other, self).__truediv__(self)

    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __pow__(self, p):
        x = self.data

        def backward_fn(grad):
            return [grad * p * x ** (p - 1)]
        return self._result(x ** p, [self], backward_fn)

    def mean(self):
        shape = self.data.shape
        n = float(self.data.numel())

        def backward_fn(grad):
            return [grad.expand(shape) / n]
        return self._result(self.data.mean(), [self], backward_fn)

    @property
    def T(self):
        return self._result(self.data.t(), [self], lambda grad: [grad.t()])

    def reshape(self, shape):
        old_shape = self.data.shape
        return self._result(self.data.reshape(shape), [self], lambda grad: [grad.reshape(old_shape)])

    # ------------------------------------------------------------------
    def _topo(self):
        order = []
        done = set()
        todo = [(self, 0)]
        while todo:
            node, state = todo.pop()
            if state == 1:
                order.append(node)
            elif id(node) not in done:
                done.add(id(node))
                todo.append((node, 1))
                for p in node._parents:
                    if p.requires_grad and id(p) not in done:
                        todo.append((p, 0))
        return order

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones(self.data.shape)
        grads = {id(self): grad}
        for node in reversed(self._topo()):
            g = grads.pop(id(node))
            if node._backward_fn is None:
                if node.grad is None:
                    node.grad = g.clone()
                else:
                    node.grad = node.grad + g
                continue
            for p, pg in zip(node._parents, node._backward_fn(g)):
                if not p.requires_grad:
                    continue
                if id(p) in grads:
                    grads[id(p)] = grads[id(p)] + pg
                else:
                    grads[id(p)] = pg
