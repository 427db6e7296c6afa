"""Autograd engine whose backward pass is driven by a priority queue.

Every tensor gets a creation number; an op's inputs always exist before its
output, so popping the largest creation number first is a topological order.
Each op stores its name and what its rule reads in ``_saved``; the rule is the
method ``_grad_<op>``.
"""
from __future__ import annotations

import heapq
import itertools

import torch
import torch.nn.functional as F

_counter = itertools.count()


class _Mode:
    enabled = True


class no_grad:
    """``with no_grad():`` records nothing; nests and survives exceptions."""

    def __enter__(self):
        self._previous = _Mode.enabled
        _Mode.enabled = False
        return self

    def __exit__(self, exc_type, exc, tb):
        _Mode.enabled = self._previous
        return False


class Tensor:
    def __init__(self, data, requires_grad=False):
        if not isinstance(data, torch.Tensor):
            data = torch.as_tensor(data, dtype=torch.float64)
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._seq = next(_counter)
        self._op = None
        self._inputs = ()
        self._saved = {}

    def __repr__(self):
        return f"Tensor(op={self._op}, shape={tuple(self.data.shape)})"

    # ---- plumbing -------------------------------------------------------------
    def _const(self, x):
        if isinstance(x, Tensor):
            return x
        return Tensor(torch.tensor(x, dtype=self.data.dtype))

    @staticmethod
    def _node(data, op, inputs, **saved):
        out = Tensor(data)
        if _Mode.enabled and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._op = op
            out._inputs = inputs
            out._saved = saved
        return out

    # ---- core ---------------------------------------------------------------
    def __add__(self, other):
        other = self._const(other)
        return Tensor._node(self.data + other.data, "add", (self, other))

    __radd__ = __add__

    def __mul__(self, other):
        other = self._const(other)
        return Tensor._node(self.data * other.data, "mul", (self, other),
                            a=self.data, b=other.data)

    __rmul__ = __mul__

    def __matmul__(self, other):
        return Tensor._node(self.data @ other.data, "matmul", (self, other),
                            a=self.data, b=other.data)

    def relu(self):
        return Tensor._node(self.data.clamp(min=0), "relu", (self,), mask=self.data > 0)

    def sum(self):
        return Tensor._node(self.data.sum(), "sum", (self,))

    # ---- extensions -------------------------------------------------------------
    def __neg__(self):
        return Tensor._node(-self.data, "neg", (self,))

    def __sub__(self, other):
        return self + (-self._const(other))

    def __rsub__(self, other):
        return self._const(other) - self

    def __truediv__(self, other):
        other = self._const(other)
        return Tensor._node(self.data / other.data, "div", (self, other),
                            a=self.data, b=other.data)

    def __rtruediv__(self, other):
        return self._const(other) / self

    def __pow__(self, p):
        return Tensor._node(self.data ** p, "pow", (self,), a=self.data, p=p)

    def exp(self):
        out = self.data.exp()
        return Tensor._node(out, "exp", (self,), out=out)

    def mean(self):
        return Tensor._node(self.data.mean(), "mean", (self,))

    @property
    def T(self):
        return Tensor._node(self.data.T, "transpose", (self,))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        return Tensor._node(self.data.reshape(shape), "reshape", (self,))

    def maximum(self, other):
        other = self._const(other)
        return Tensor._node(torch.maximum(self.data, other.data), "maximum", (self, other),
                            a_wins=self.data >= other.data)

    def _windows(self, k):
        n, c, h, w = self.data.shape
        ho, wo = h // k, w // k
        x = self.data[:, :, : ho * k, : wo * k]
        return x.reshape(n, c, ho, k, wo, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho, wo, k * k)

    def max_pool2d(self, k):
        values, idx = self._windows(k).max(dim=-1)
        return Tensor._node(values, "max_pool2d", (self,), k=k, idx=idx)

    def avg_pool2d(self, k):
        return Tensor._node(self._windows(k).mean(dim=-1), "avg_pool2d", (self,), k=k)

    def conv2d(self, weight):
        x, w = self.data, weight.data
        n, _, h, wd = x.shape
        o, c, kh, kw = w.shape
        cols = F.unfold(x, (kh, kw))                      # (N, C*kh*kw, L)
        out = w.reshape(o, -1) @ cols                       # (N, O, L)
        out = out.reshape(n, o, h - kh + 1, wd - kw + 1)
        return Tensor._node(out, "conv2d", (self, weight), cols=cols, w=w)

    def __getitem__(self, ids):
        return Tensor._node(self.data[ids], "embedding", (self,), ids=ids)

    def batch_norm(self, eps=1e-5):
        x = self.data
        mu = x.mean(dim=0, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=0, keepdim=True)
        inv_std = (var + eps).rsqrt()
        xhat = (x - mu) * inv_std
        return Tensor._node(xhat, "batch_norm", (self,), xhat=xhat, inv_std=inv_std)

    def cross_entropy(self, target):
        x = self.data
        rows = torch.arange(x.shape[0])
        shifted = x - x.max(dim=1, keepdim=True).values
        log_probs = shifted - torch.logsumexp(shifted, dim=1, keepdim=True)
        loss = -log_probs[rows, target].mean()
        return Tensor._node(loss, "cross_entropy", (self,),
                            probs=log_probs.exp(), target=target)

    # ---- backward rules: upstream g -> one gradient per input ---------------------
    def _grad_add(self, g):
        a, b = self._inputs
        return g.sum_to_size(a.data.shape), g.sum_to_size(b.data.shape)

    def _grad_mul(self, g):
        s = self._saved
        return (g * s["b"]).sum_to_size(s["a"].shape), (g * s["a"]).sum_to_size(s["b"].shape)

    def _grad_matmul(self, g):
        s = self._saved
        return g @ s["b"].T, s["a"].T @ g

    def _grad_relu(self, g):
        return (g * self._saved["mask"],)

    def _grad_sum(self, g):
        return (g.reshape(()).expand(self._inputs[0].data.shape).clone(),)

    def _grad_neg(self, g):
        return (-g,)

    def _grad_div(self, g):
        s = self._saved
        a, b = s["a"], s["b"]
        return (g / b).sum_to_size(a.shape), (-g * a / (b * b)).sum_to_size(b.shape)

    def _grad_pow(self, g):
        s = self._saved
        return (g * s["p"] * s["a"] ** (s["p"] - 1),)

    def _grad_exp(self, g):
        return (g * self._saved["out"],)

    def _grad_mean(self, g):
        x = self._inputs[0].data
        return (g.reshape(()).expand(x.shape) / x.numel(),)

    def _grad_transpose(self, g):
        return (g.T,)

    def _grad_reshape(self, g):
        return (g.reshape(self._inputs[0].data.shape),)

    def _grad_maximum(self, g):
        a, b = self._inputs
        wins = self._saved["a_wins"]
        return (g * wins).sum_to_size(a.data.shape), (g * ~wins).sum_to_size(b.data.shape)

    def _unwindow(self, gw, k):
        x = self._inputs[0].data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        full = torch.zeros_like(x)
        full[:, :, : ho * k, : wo * k] = (
            gw.reshape(n, c, ho, wo, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k))
        return full

    def _grad_max_pool2d(self, g):
        k, idx = self._saved["k"], self._saved["idx"]
        gw = torch.zeros(*g.shape, k * k, dtype=g.dtype)
        gw.scatter_(-1, idx.unsqueeze(-1), g.unsqueeze(-1))
        return (self._unwindow(gw, k),)

    def _grad_avg_pool2d(self, g):
        k = self._saved["k"]
        gw = (g / (k * k)).unsqueeze(-1).expand(*g.shape, k * k)
        return (self._unwindow(gw, k),)

    def _grad_conv2d(self, g):
        x, wt = self._inputs
        cols, w = self._saved["cols"], self._saved["w"]
        n, o = g.shape[0], g.shape[1]
        g2 = g.reshape(n, o, -1)                                   # (N, O, L)
        gw = (g2 @ cols.transpose(1, 2)).sum(0).reshape(w.shape)
        gcols = w.reshape(o, -1).T @ g2                             # (N, C*kh*kw, L)
        gx = F.fold(gcols, x.data.shape[2:], w.shape[2:])
        return gx, gw

    def _grad_embedding(self, g):
        ids = self._saved["ids"]
        w = self._inputs[0].data
        gw = torch.zeros_like(w)
        gw.index_add_(0, ids.reshape(-1), g.reshape(-1, *w.shape[1:]))
        return (gw,)

    def _grad_batch_norm(self, g):
        xhat, inv_std = self._saved["xhat"], self._saved["inv_std"]
        n = g.shape[0]
        dx = inv_std / n * (n * g - g.sum(0, keepdim=True)
                            - xhat * (g * xhat).sum(0, keepdim=True))
        return (dx,)

    def _grad_cross_entropy(self, g):
        probs, target = self._saved["probs"], self._saved["target"]
        d = probs.clone()
        d[torch.arange(d.shape[0]), target] -= 1
        return (d * g / d.shape[0],)

    # ---- backward -------------------------------------------------------------
    def backward(self, grad=None):
        buffers = {id(self): torch.ones_like(self.data) if grad is None else grad}
        heap = [(-self._seq, self)]
        queued = {id(self)}
        while heap:
            _, node = heapq.heappop(heap)
            g = buffers.pop(id(node))
            if node._op is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            grads = getattr(node, "_grad_" + node._op)(g)
            for inp, gi in zip(node._inputs, grads):
                if not inp.requires_grad:
                    continue
                key = id(inp)
                if key in buffers:
                    buffers[key] = buffers[key] + gi
                else:
                    buffers[key] = gi
                if key not in queued:
                    queued.add(key)
                    heapq.heappush(heap, (-inp._seq, inp))
            node._op, node._inputs, node._saved = None, (), {}
