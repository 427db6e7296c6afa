import contextlib

import torch
import torch.nn.functional as F

WHITE, GREY, BLACK = 0, 1, 2
_grad_mode = {"on": True}


@contextlib.contextmanager
def no_grad():
    prev = _grad_mode["on"]
    _grad_mode["on"] = False
    try:
        yield
    finally:
        _grad_mode["on"] = prev


def unbroadcast(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = None       # name of the op that produced this tensor
        self.args = ()       # its tensor inputs
        self.saved = {}      # whatever the backward rule needs

    def __repr__(self):
        return f"Tensor({self.data}, op={self.op})"

    def _num(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    @staticmethod
    def _record(data, op, args, **saved):
        out = Tensor(data)
        if _grad_mode["on"] and any(a.requires_grad for a in args):
            out.requires_grad = True
            out.op, out.args, out.saved = op, args, saved
        return out

    # ----------------------------------------------------------------- forward
    def __add__(self, o):
        o = self._num(o)
        return Tensor._record(self.data + o.data, "add", (self, o))

    def __radd__(self, o):
        return self + o

    def __mul__(self, o):
        o = self._num(o)
        return Tensor._record(self.data * o.data, "mul", (self, o))

    def __rmul__(self, o):
        return self * o

    def __matmul__(self, o):
        return Tensor._record(self.data @ o.data, "matmul", (self, o))

    def relu(self):
        return Tensor._record(self.data.clamp(min=0), "relu", (self,))

    def sum(self):
        return Tensor._record(self.data.sum(), "sum", (self,))

    def __neg__(self):
        return Tensor._record(-self.data, "neg", (self,))

    def __sub__(self, o):
        o = self._num(o)
        return Tensor._record(self.data - o.data, "sub", (self, o))

    def __rsub__(self, o):
        return self._num(o) - self

    def __truediv__(self, o):
        o = self._num(o)
        return Tensor._record(self.data / o.data, "div", (self, o))

    def __rtruediv__(self, o):
        return self._num(o) / self

    def __pow__(self, p):
        return Tensor._record(self.data ** p, "pow", (self,), p=p)

    def exp(self):
        return Tensor._record(self.data.exp(), "exp", (self,))

    def log(self):
        return Tensor._record(self.data.log(), "log", (self,))

    def tanh(self):
        return Tensor._record(self.data.tanh(), "tanh", (self,))

    def sigmoid(self):
        return Tensor._record(self.data.sigmoid(), "sigmoid", (self,))

    def mean(self):
        return Tensor._record(self.data.mean(), "mean", (self,))

    @property
    def T(self):
        return Tensor._record(self.data.T, "T", (self,))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return Tensor._record(self.data.reshape(shape), "reshape", (self,))

    def maximum(self, o):
        o = self._num(o)
        return Tensor._record(torch.maximum(self.data, o.data), "maximum", (self, o))

    def max_pool2d(self, k):
        y, idx = F.max_pool2d(self.data, k, return_indices=True)
        return Tensor._record(y, "max_pool2d", (self,), idx=idx)

    def avg_pool2d(self, k):
        return Tensor._record(F.avg_pool2d(self.data, k), "avg_pool2d", (self,), k=k)

    def conv2d(self, w):
        return Tensor._record(F.conv2d(self.data, w.data), "conv2d", (self, w))

    def __getitem__(self, ids):
        return Tensor._record(self.data[ids], "embedding", (self,), ids=ids)

    def batch_norm(self, eps=1e-5):
        x = self.data
        mu = x.mean(dim=0, keepdim=True)
        var = ((x - mu) ** 2).mean(dim=0, keepdim=True)
        std = torch.sqrt(var + eps)
        return Tensor._record((x - mu) / std, "batch_norm", (self,), std=std)

    def cross_entropy(self, target):
        z = self.data
        logp = z - z.logsumexp(dim=1, keepdim=True)
        loss = -logp.gather(1, target[:, None]).mean()
        return Tensor._record(loss, "cross_entropy", (self,), logp=logp, target=target)

    # ---------------------------------------------------------------- backward
    def _local_grads(self, g):
        """One gradient per entry of self.args."""
        op, s = self.op, self.saved
        xs = [a.data for a in self.args]
        y = self.data
        if op == "add":
            return [unbroadcast(g, xs[0].shape), unbroadcast(g, xs[1].shape)]
        elif op == "sub":
            return [unbroadcast(g, xs[0].shape), unbroadcast(-g, xs[1].shape)]
        elif op == "mul":
            return [unbroadcast(g * xs[1], xs[0].shape), unbroadcast(g * xs[0], xs[1].shape)]
        elif op == "div":
            a, b = xs
            return [unbroadcast(g / b, a.shape), unbroadcast(-g * a / b ** 2, b.shape)]
        elif op == "matmul":
            return [g @ xs[1].T, xs[0].T @ g]
        elif op == "relu":
            return [g * (xs[0] > 0)]
        elif op == "sum":
            return [g * torch.ones_like(xs[0])]
        elif op == "mean":
            return [g * torch.ones_like(xs[0]) / xs[0].numel()]
        elif op == "neg":
            return [-g]
        elif op == "pow":
            p = s["p"]
            return [g * p * xs[0] ** (p - 1)]
        elif op == "exp":
            return [g * y]
        elif op == "log":
            return [g / xs[0]]
        elif op == "tanh":
            return [g * (1 - y ** 2)]
        elif op == "sigmoid":
            return [g * y * (1 - y)]
        elif op == "T":
            return [g.T]
        elif op == "reshape":
            return [g.reshape(xs[0].shape)]
        elif op == "maximum":
            a, b = xs
            wa = (a > b).to(g.dtype) + 0.5 * (a == b).to(g.dtype)
            return [unbroadcast(g * wa, a.shape), unbroadcast(g * (1 - wa), b.shape)]
        elif op == "max_pool2d":
            gx = torch.zeros_like(xs[0]).flatten(2)
            gx.scatter_add_(2, s["idx"].flatten(2), g.flatten(2))
            return [gx.view_as(xs[0])]
        elif op == "avg_pool2d":
            k = s["k"]
            gx = torch.zeros_like(xs[0])
            ho, wo = g.shape[-2], g.shape[-1]
            gx[..., : ho * k, : wo * k] = g.repeat_interleave(k, -2).repeat_interleave(k, -1) / (k * k)
            return [gx]
        elif op == "conv2d":
            x, w = xs
            return [F.conv_transpose2d(g, w), F.conv2d(x.transpose(0, 1), g.transpose(0, 1)).transpose(0, 1)]
        elif op == "embedding":
            gw = torch.zeros_like(xs[0])
            gw.index_put_((s["ids"],), g, accumulate=True)
            return [gw]
        elif op == "batch_norm":
            return [g / s["std"]]
        elif op == "cross_entropy":
            logp, t = s["logp"], s["target"]
            d = logp.exp()
            d[torch.arange(len(t)), t] -= 1
            return [g * d / len(t)]
        raise ValueError(f"no backward rule for {op}")

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("tensor does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad must be given for non-scalar outputs")
            grad = torch.ones_like(self.data)

        # colour-marking DFS: grey on entry, black on exit; exit order is topological
        colour, order, stack = {self: GREY}, [], [(self, 0)]
        while stack:
            node, i = stack[-1]
            if i < len(node.args):
                stack[-1] = (node, i + 1)
                a = node.args[i]
                if a.requires_grad and colour.get(a, WHITE) == WHITE:
                    colour[a] = GREY
                    stack.append((a, 0))
            else:
                colour[node] = BLACK
                order.append(node)
                stack.pop()

        grads = {self: grad.to(self.data.dtype)}
        for node in reversed(order):
            g = grads.pop(node)
            node.grad = g.clone() if node.grad is None else node.grad + g
            if node.op is None:
                continue
            for a, ga in zip(node.args, node._local_grads(g)):
                if a.requires_grad:
                    grads[a] = grads[a] + ga if a in grads else ga
        for node in order:
            node.op, node.args, node.saved = None, (), {}
