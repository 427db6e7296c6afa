"""Reverse-mode autograd over torch tensors.

Design: every Tensor that results from an op remembers its inputs and a
vector-Jacobian product (``_vjp``) mapping the gradient of the output to one
gradient per input.  A separate ``Engine`` object runs the backward pass: it
ranks the graph's nodes in topological order (iteratively, no recursion) and
then drains a run queue (a heap ordered by rank) so that a node is only
processed once every consumer of it has already been processed.
"""

import contextlib
import heapq

import torch
import torch.nn.functional as F


_GRAD_MODE = {"enabled": True}


@contextlib.contextmanager
def no_grad():
    previous = _GRAD_MODE["enabled"]
    _GRAD_MODE["enabled"] = False
    try:
        yield
    finally:
        _GRAD_MODE["enabled"] = previous


def _sum_to_shape(g, shape):
    """Undo broadcasting: sum ``g`` down to ``shape``."""
    while g.dim() > len(shape):
        g = g.sum(0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis, keepdim=True)
    return g


class Engine:
    def rank(self, root):
        """Topological rank of every node reachable from ``root`` through tensors
        that require grad: inputs get smaller ranks than their consumers."""
        rank = {}
        expanded = set()
        stack = [(root, False)]
        while stack:
            node, finished = stack.pop()
            if finished:
                rank[node] = len(rank)
                continue
            if node in expanded:
                continue
            expanded.add(node)
            stack.append((node, True))
            for inp in node._inputs:
                if inp.requires_grad and inp not in expanded:
                    stack.append((inp, False))
        return rank

    def run(self, root, seed):
        rank = self.rank(root)
        grads = {root: seed}
        queue = [(-rank[root], id(root), root)]
        queued = {root}
        visited = []
        while queue:
            _, _, node = heapq.heappop(queue)
            visited.append(node)
            g = grads.pop(node)
            node.grad = g.clone() if node.grad is None else node.grad + g
            if node._vjp is None:
                continue
            for inp, gi in zip(node._inputs, node._vjp(g)):
                if not inp.requires_grad:
                    continue
                grads[inp] = gi if inp not in grads else grads[inp] + gi
                if inp not in queued:
                    queued.add(inp)
                    heapq.heappush(queue, (-rank[inp], id(inp), inp))
        # free the graph: nothing the output refers to is needed any more
        for node in visited:
            node._inputs = ()
            node._vjp = None


_ENGINE = Engine()


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._vjp = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    @property
    def shape(self):
        return self.data.shape

    # -- plumbing -------------------------------------------------------------
    def _lift(self, other):
        if isinstance(other, Tensor):
            return other
        return Tensor(torch.as_tensor(other, dtype=self.data.dtype))

    @staticmethod
    def _result(data, inputs, vjp):
        out = Tensor(data)
        if _GRAD_MODE["enabled"] and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._inputs = tuple(inputs)
            out._vjp = vjp
        return out

    # -- core -------------------------------------------------------------------
    def __add__(self, other):
        other = self._lift(other)
        a_shape, b_shape = self.data.shape, other.data.shape

        def vjp(g):
            return _sum_to_shape(g, a_shape), _sum_to_shape(g, b_shape)

        return Tensor._result(self.data + other.data, (self, other), vjp)

    __radd__ = __add__

    def __mul__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data

        def vjp(g):
            return _sum_to_shape(g * b, a.shape), _sum_to_shape(g * a, b.shape)

        return Tensor._result(a * b, (self, other), vjp)

    __rmul__ = __mul__

    def __matmul__(self, other):
        a, b = self.data, other.data

        def vjp(g):
            return g @ b.T, a.T @ g

        return Tensor._result(a @ b, (self, other), vjp)

    def relu(self):
        x = self.data

        def vjp(g):
            return (g * (x > 0).to(g.dtype),)

        return Tensor._result(x.clamp(min=0), (self,), vjp)

    def sum(self):
        shape = self.data.shape

        def vjp(g):
            return (g.expand(shape).clone(),)

        return Tensor._result(self.data.sum(), (self,), vjp)

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad must be given for a non-scalar output")
            grad = torch.ones_like(self.data)
        else:
            grad = torch.as_tensor(grad, dtype=self.data.dtype).reshape(self.data.shape)
        _ENGINE.run(self, grad)

    # -- extensions -------------------------------------------------------------
    def __neg__(self):
        return Tensor._result(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-self._lift(other))

    def __rsub__(self, other):
        return self._lift(other) + (-self)

    def __truediv__(self, other):
        other = self._lift(other)
        a, b = self.data, other.data

        def vjp(g):
            return _sum_to_shape(g / b, a.shape), _sum_to_shape(-g * a / (b * b), b.shape)

        return Tensor._result(a / b, (self, other), vjp)

    def __rtruediv__(self, other):
        return self._lift(other) / self

    def __pow__(self, p):
        x = self.data

        def vjp(g):
            return (g * p * x ** (p - 1),)

        return Tensor._result(x ** p, (self,), vjp)

    def exp(self):
        y = self.data.exp()
        return Tensor._result(y, (self,), lambda g: (g * y,))

    def log(self):
        x = self.data
        return Tensor._result(x.log(), (self,), lambda g: (g / x,))

    def tanh(self):
        y = self.data.tanh()
        return Tensor._result(y, (self,), lambda g: (g * (1 - y * y),))

    def sigmoid(self):
        y = torch.sigmoid(self.data)
        return Tensor._result(y, (self,), lambda g: (g * y * (1 - y),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return Tensor._result(self.data.mean(), (self,), lambda g: ((g / n).expand(shape).clone(),))

    @property
    def T(self):
        return Tensor._result(self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        old = self.data.shape
        return Tensor._result(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def maximum(self, other):
        other = self._lift(other)
        a, b = self.data, other.data

        def vjp(g):
            wa = (a > b).to(g.dtype) + 0.5 * (a == b).to(g.dtype)
            return _sum_to_shape(g * wa, a.shape), _sum_to_shape(g * (1 - wa), b.shape)

        return Tensor._result(torch.maximum(a, b), (self, other), vjp)

    def max_pool2d(self, k):
        x = self.data
        out, idx = F.max_pool2d(x, k, return_indices=True)

        def vjp(g):
            gx = torch.zeros_like(x).flatten(2)
            gx.scatter_add_(2, idx.flatten(2), g.flatten(2))
            return (gx.view_as(x),)

        return Tensor._result(out, (self,), vjp)

    def avg_pool2d(self, k):
        x = self.data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k

        def vjp(g):
            gx = torch.zeros_like(x)
            up = g.repeat_interleave(k, 2).repeat_interleave(k, 3) / (k * k)
            gx[:, :, : ho * k, : wo * k] = up
            return (gx,)

        return Tensor._result(F.avg_pool2d(x, k), (self,), vjp)

    def conv2d(self, weight):
        x, w = self.data, weight.data

        def vjp(g):
            gx = F.conv_transpose2d(g, w)
            gw = F.conv2d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)
            return gx, gw

        return Tensor._result(F.conv2d(x, w), (self, weight), vjp)

    def __getitem__(self, ids):
        W = self.data

        def vjp(g):
            gW = torch.zeros_like(W)
            gW.index_add_(0, ids.reshape(-1), g.reshape(-1, *W.shape[1:]))
            return (gW,)

        return Tensor._result(W[ids], (self,), vjp)

    def batch_norm(self, eps=1e-5):
        x = self.data
        n = x.shape[0]
        mu = x.mean(0)
        inv_std = 1.0 / torch.sqrt(x.var(0, unbiased=False) + eps)
        xhat = (x - mu) * inv_std

        def vjp(g):
            gx = inv_std / n * (n * g - g.sum(0) - xhat * (g * xhat).sum(0))
            return (gx,)

        return Tensor._result(xhat, (self,), vjp)

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        lse = torch.logsumexp(z, dim=1)
        loss = (lse - z[torch.arange(n), target]).mean()

        def vjp(g):
            p = torch.softmax(z, dim=1)
            p[torch.arange(n), target] -= 1
            return (g * p / n,)

        return Tensor._result(loss, (self,), vjp)
