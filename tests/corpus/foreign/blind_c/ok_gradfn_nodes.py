"""Reverse-mode autograd in the style of torch itself.

Every result that requires grad carries a ``creator``: a node object that saves
only what its rule reads and points at the nodes of its inputs
(``next_nodes``).  Leaves are reached through ``AccumulateGrad`` nodes.
Backward sorts the nodes (iterative post-order DFS), runs them in reverse and
frees every node it ran.
"""

from __future__ import annotations

import contextlib

import torch


class _GradMode:
    enabled = True


@contextlib.contextmanager
def no_grad():
    previous = _GradMode.enabled
    _GradMode.enabled = False
    try:
        yield
    finally:
        _GradMode.enabled = previous


def _sum_to(g, shape):
    shape = tuple(shape)
    while g.dim() > len(shape):
        g = g.sum(0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis, keepdim=True)
    return g


# ---------------------------------------------------------------- graph nodes


class Node:
    """One op of the recorded graph: ``saved`` holds what its rule reads."""

    next_nodes: tuple = ()
    saved: tuple = ()

    def __init__(self, *saved):
        self.saved = saved

    def apply(self, g):
        raise NotImplementedError

    def release(self):
        self.next_nodes = ()
        self.saved = ()


class AccumulateGrad(Node):
    def __init__(self, tensor):
        self.variable = tensor

    def apply(self, g):
        v = self.variable
        g = g.detach()
        v.grad = g.clone() if v.grad is None else v.grad + g
        return ()

    def release(self):
        pass


class AddBackward(Node):
    def apply(self, g):
        sa, sb = self.saved
        return _sum_to(g, sa), _sum_to(g, sb)


class MulBackward(Node):
    def apply(self, g):
        a, b = self.saved
        return _sum_to(g * b, a.shape), _sum_to(g * a, b.shape)


class ScaleBackward(Node):
    def apply(self, g):
        (c,) = self.saved
        return (g * c,)


class MmBackward(Node):
    def apply(self, g):
        a, b = self.saved
        return g @ b.T, a.T @ g


class ReluBackward(Node):
    def apply(self, g):
        (mask,) = self.saved
        return (g * mask,)


class SumBackward(Node):
    def apply(self, g):
        (shape,) = self.saved
        return (g.expand(shape).clone(),)


class MeanBackward(Node):
    def apply(self, g):
        shape, n = self.saved
        return ((g / n).expand(shape).clone(),)


class NegBackward(Node):
    def apply(self, g):
        return (-g,)


class SubBackward(Node):
    def apply(self, g):
        sa, sb = self.saved
        return _sum_to(g, sa), _sum_to(-g, sb)


class DivBackward(Node):
    def apply(self, g):
        a, b = self.saved
        return _sum_to(g / b, a.shape), _sum_to(-g * a / (b * b), b.shape)


class RDivBackward(Node):
    def apply(self, g):
        c, x = self.saved
        return (-g * c / (x * x),)


class PowBackward(Node):
    def apply(self, g):
        x, p = self.saved
        return (g * p * x ** (p - 1),)


class ExpBackward(Node):
    def apply(self, g):
        (out,) = self.saved
        return (g * out,)


class LogBackward(Node):
    def apply(self, g):
        (x,) = self.saved
        return (g / x,)


class TanhBackward(Node):
    def apply(self, g):
        (out,) = self.saved
        return (g * (1 - out * out),)


class SigmoidBackward(Node):
    def apply(self, g):
        (out,) = self.saved
        return (g * out * (1 - out),)


class TBackward(Node):
    def apply(self, g):
        return (g.T,)


class ReshapeBackward(Node):
    def apply(self, g):
        (shape,) = self.saved
        return (g.reshape(shape),)


class MaximumBackward(Node):
    def apply(self, g):
        a_wins, sa, sb = self.saved
        return _sum_to(g * a_wins, sa), _sum_to(g * ~a_wins, sb)


class MaxPoolBackward(Node):
    def apply(self, g):
        shape, idx, k = self.saved
        n, c, h, w = shape
        ho, wo = h // k, w // k
        win = torch.zeros(n, c, ho, wo, k * k, dtype=g.dtype)
        win.scatter_(-1, idx.unsqueeze(-1), g.unsqueeze(-1))
        full = win.reshape(n, c, ho, wo, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)
        out = torch.zeros(shape, dtype=g.dtype)
        out[:, :, : ho * k, : wo * k] = full
        return (out,)


class AvgPoolBackward(Node):
    def apply(self, g):
        shape, k = self.saved
        full = g.repeat_interleave(k, dim=2).repeat_interleave(k, dim=3) / (k * k)
        out = torch.zeros(shape, dtype=g.dtype)
        out[:, :, : full.shape[2], : full.shape[3]] = full
        return (out,)


class ConvBackward(Node):
    def apply(self, g):
        x, w = self.saved
        kh, kw = w.shape[2], w.shape[3]
        ho, wo = g.shape[2], g.shape[3]
        gx = torch.zeros_like(x)
        gw = torch.zeros_like(w)
        for i in range(kh):
            for j in range(kw):
                patch = x[:, :, i : i + ho, j : j + wo]
                gx[:, :, i : i + ho, j : j + wo] += torch.einsum("nohw,oc->nchw", g, w[:, :, i, j])
                gw[:, :, i, j] = torch.einsum("nohw,nchw->oc", g, patch)
        return gx, gw


class EmbeddingBackward(Node):
    def apply(self, g):
        shape, ids = self.saved
        out = torch.zeros(shape, dtype=g.dtype)
        out.index_add_(0, ids.reshape(-1), g.reshape(-1, *shape[1:]))
        return (out,)


class BatchNormBackward(Node):
    def apply(self, g):
        xhat, inv_std = self.saved
        n = g.shape[0]
        dx = (n * g - g.sum(0) - xhat * (g * xhat).sum(0)) * inv_std / n
        return (dx,)


class CrossEntropyBackward(Node):
    def apply(self, g):
        probs, target = self.saved
        n = probs.shape[0]
        d = probs.clone()
        d[torch.arange(n), target] -= 1
        return (d * (g / n),)


# ---------------------------------------------------------------- the tensor


class Tensor:
    def __init__(self, data, requires_grad=False):
        if not isinstance(data, torch.Tensor):
            data = torch.as_tensor(data)
        self.data = data
        self.requires_grad = bool(requires_grad)
        self.grad = None
        self.creator = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    @property
    def shape(self):
        return self.data.shape

    def _edge(self):
        if not self.requires_grad:
            return None
        return self.creator if self.creator is not None else AccumulateGrad(self)

    @staticmethod
    def _wrap(x, like):
        if isinstance(x, Tensor):
            return x
        return Tensor(torch.as_tensor(x, dtype=like.data.dtype))

    @staticmethod
    def _result(data, inputs, make_node):
        out = Tensor(data)
        if _GradMode.enabled and any(t.requires_grad for t in inputs):
            node = make_node()
            node.next_nodes = tuple(t._edge() for t in inputs)
            out.requires_grad = True
            out.creator = node
        return out

    # core
    def __add__(self, other):
        other = self._wrap(other, self)
        return self._result(self.data + other.data, (self, other),
                            lambda: AddBackward(self.data.shape, other.data.shape))

    __radd__ = __add__

    def __mul__(self, other):
        if not isinstance(other, Tensor):
            c = other
            return self._result(self.data * c, (self,), lambda: ScaleBackward(c))
        a, b = self.data, other.data
        return self._result(a * b, (self, other), lambda: MulBackward(a, b))

    __rmul__ = __mul__

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda: MmBackward(a, b))

    def relu(self):
        mask = self.data > 0
        return self._result(self.data * mask, (self,), lambda: ReluBackward(mask))

    def sum(self):
        shape = self.data.shape
        return self._result(self.data.sum(), (self,), lambda: SumBackward(shape))

    # extensions
    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return self._result(self.data.mean(), (self,), lambda: MeanBackward(shape, n))

    def __neg__(self):
        return self._result(-self.data, (self,), lambda: NegBackward())

    def __sub__(self, other):
        other = self._wrap(other, self)
        return self._result(self.data - other.data, (self, other),
                            lambda: SubBackward(self.data.shape, other.data.shape))

    def __rsub__(self, other):
        return (-self) + other

    def __truediv__(self, other):
        other = self._wrap(other, self)
        a, b = self.data, other.data
        return self._result(a / b, (self, other), lambda: DivBackward(a, b))

    def __rtruediv__(self, other):
        x = self.data
        return self._result(other / x, (self,), lambda: RDivBackward(other, x))

    def __pow__(self, p):
        x = self.data
        return self._result(x ** p, (self,), lambda: PowBackward(x, p))

    def exp(self):
        out = self.data.exp()
        return self._result(out, (self,), lambda: ExpBackward(out))

    def log(self):
        x = self.data
        return self._result(x.log(), (self,), lambda: LogBackward(x))

    def tanh(self):
        out = self.data.tanh()
        return self._result(out, (self,), lambda: TanhBackward(out))

    def sigmoid(self):
        out = torch.sigmoid(self.data)
        return self._result(out, (self,), lambda: SigmoidBackward(out))

    @property
    def T(self):
        return self._result(self.data.T, (self,), lambda: TBackward())

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        old = self.data.shape
        return self._result(self.data.reshape(shape), (self,), lambda: ReshapeBackward(old))

    def maximum(self, other):
        other = self._wrap(other, self)
        a_wins = self.data >= other.data
        return self._result(torch.maximum(self.data, other.data), (self, other),
                            lambda: MaximumBackward(a_wins, self.data.shape, other.data.shape))

    def _windows(self, k):
        x = self.data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        win = x[:, :, : ho * k, : wo * k].reshape(n, c, ho, k, wo, k).permute(0, 1, 2, 4, 3, 5)
        return win.reshape(n, c, ho, wo, k * k)

    def max_pool2d(self, k):
        val, idx = self._windows(k).max(-1)
        shape = self.data.shape
        return self._result(val, (self,), lambda: MaxPoolBackward(shape, idx, k))

    def avg_pool2d(self, k):
        shape = self.data.shape
        return self._result(self._windows(k).mean(-1), (self,), lambda: AvgPoolBackward(shape, k))

    def conv2d(self, weight):
        x, w = self.data, weight.data
        kh, kw = w.shape[2], w.shape[3]
        ho, wo = x.shape[2] - kh + 1, x.shape[3] - kw + 1
        out = torch.zeros(x.shape[0], w.shape[0], ho, wo, dtype=x.dtype)
        for i in range(kh):
            for j in range(kw):
                out += torch.einsum("nchw,oc->nohw", x[:, :, i : i + ho, j : j + wo], w[:, :, i, j])
        return self._result(out, (self, weight), lambda: ConvBackward(x, w))

    def __getitem__(self, ids):
        ids = torch.as_tensor(ids)
        shape = self.data.shape
        return self._result(self.data[ids], (self,), lambda: EmbeddingBackward(shape, ids))

    def batch_norm(self, eps=1e-5):
        x = self.data
        mu = x.mean(0)
        var = x.var(0, unbiased=False)
        inv_std = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * inv_std
        return self._result(xhat, (self,), lambda: BatchNormBackward(xhat, inv_std))

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        shifted = z - z.max(dim=1, keepdim=True).values
        logp = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
        loss = -logp[torch.arange(n), target].mean()
        probs = logp.exp()
        return self._result(loss, (self,), lambda: CrossEntropyBackward(probs, target))

    # backward
    def backward(self, grad=None):
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for one-element outputs")
            grad = torch.ones_like(self.data)
        root = self._edge()
        if root is None:
            raise RuntimeError("this tensor does not require grad")
        order, seen = [], {id(root)}
        stack = [(root, iter(root.next_nodes))]
        while stack:
            node, children = stack[-1]
            advanced = False
            for child in children:
                if child is not None and id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(child.next_nodes)))
                    advanced = True
                    break
            if not advanced:
                stack.pop()
                order.append(node)
        grads = {id(root): grad}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            outs = node.apply(g)
            for child, cg in zip(node.next_nodes, outs):
                if child is None:
                    continue
                key = id(child)
                grads[key] = cg if key not in grads else grads[key] + cg
        for node in order:
            node.release()
