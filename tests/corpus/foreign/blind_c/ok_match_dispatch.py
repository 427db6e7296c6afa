"""Autograd engine: every node records an op name, its inputs and a small ctx.

Backward orders nodes by depth (a node is deeper than all of its inputs), then
dispatches on the op name with a ``match`` statement.
"""

import torch


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ: "
                         "this engine does not broadcast")


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = None
        self.inputs = ()
        self.ctx = None
        self.depth = 0

    def _make(self, data, op, inputs, ctx=None):
        out = Tensor(data)
        if any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out.op, out.inputs, out.ctx = op, inputs, ctx
            out.depth = 1 + max(t.depth for t in inputs)
        return out

    # ---- core
    def __add__(self, other):
        if isinstance(other, (int, float)):
            return self._make(self.data + other, "shift", (self,))
        _check_same_shape(self.data, other.data)
        return self._make(self.data + other.data, "add", (self, other))

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        if isinstance(other, (int, float)):
            return self._make(self.data * other, "scale", (self,), other)
        _check_same_shape(self.data, other.data)
        return self._make(self.data * other.data, "mul", (self, other), (self.data, other.data))

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        return self._make(self.data @ other.data, "matmul", (self, other), (self.data, other.data))

    def relu(self):
        return self._make(self.data.clamp(min=0), "relu", (self,), self.data > 0)

    def sum(self):
        return self._make(self.data.sum(), "sum", (self,), self.data.shape)

    # ---- extensions
    def __neg__(self):
        return self._make(-self.data, "neg", (self,))

    def __sub__(self, other):
        if isinstance(other, (int, float)):
            return self._make(self.data - other, "shift", (self,))
        _check_same_shape(self.data, other.data)
        return self._make(self.data - other.data, "sub", (self, other))

    def __rsub__(self, other):
        return self._make(other - self.data, "neg", (self,))

    def __truediv__(self, other):
        if isinstance(other, (int, float)):
            return self._make(self.data / other, "scale", (self,), 1.0 / other)
        _check_same_shape(self.data, other.data)
        return self._make(self.data / other.data, "div", (self, other), (self.data, other.data))

    def __rtruediv__(self, other):
        return self._make(other / self.data, "rdiv", (self,), (other, self.data))

    def exp(self):
        out = self.data.exp()
        return self._make(out, "exp", (self,), out)

    def log(self):
        return self._make(self.data.log(), "log", (self,), self.data)

    def tanh(self):
        out = self.data.tanh()
        return self._make(out, "tanh", (self,), out)

    def sigmoid(self):
        out = 1.0 / (1.0 + torch.exp(-self.data))
        return self._make(out, "sigmoid", (self,), out)

    def mean(self):
        return self._make(self.data.mean(), "mean", (self,), self.data.shape)

    @property
    def T(self):
        return self._make(self.data.t(), "t", (self,))

    def reshape(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        return self._make(self.data.reshape(shape), "reshape", (self,), self.data.shape)

    def maximum(self, other):
        _check_same_shape(self.data, other.data)
        first = self.data >= other.data
        return self._make(torch.maximum(self.data, other.data), "maximum", (self, other), first)

    def __getitem__(self, ids):
        return self._make(self.data[ids], "embedding", (self,), (ids, self.data.shape))

    # ---- backward
    @staticmethod
    def _rule(node, g):
        """The gradients of node's inputs, in the order of node.inputs."""
        ctx = node.ctx
        match node.op:
            case "add":
                return g, g
            case "shift":
                return (g,)
            case "mul":
                a, b = ctx
                return g * b, g * a
            case "scale":
                return (g * ctx,)
            case "matmul":
                a, b = ctx
                return g @ b.t(), a.t() @ g
            case "relu":
                return (g * ctx,)
            case "sum":
                return (torch.ones(ctx, dtype=g.dtype) * g,)
            case "neg":
                return (-g,)
            case "sub":
                return g, -g
            case "div":
                a, b = ctx
                return g / b, -g * a / b**2
            case "rdiv":
                c, x = ctx
                return (-c * g / x**2,)
            case "exp":
                return (g * ctx,)
            case "log":
                return (g / ctx,)
            case "tanh":
                return (g * (1 - ctx**2),)
            case "sigmoid":
                return (g * ctx * (1 - ctx),)
            case "mean":
                n = 1
                for s in ctx:
                    n *= s
                return (torch.ones(ctx, dtype=g.dtype) * (g / n),)
            case "t":
                return (g.t(),)
            case "reshape":
                return (g.reshape(ctx),)
            case "maximum":
                return g * ctx, g * (~ctx)
            case "embedding":
                ids, shape = ctx
                full = torch.zeros(shape, dtype=g.dtype)
                full.index_put_((ids,), g, accumulate=True)
                return (full,)
        raise ValueError(f"no backward rule for {node.op}")

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        nodes, seen, todo = [], {id(self)}, [self]
        while todo:
            t = todo.pop()
            nodes.append(t)
            for parent in t.inputs:
                if id(parent) not in seen:
                    seen.add(id(parent))
                    todo.append(parent)
        nodes.sort(key=lambda t: t.depth, reverse=True)
        grads = {id(self): grad}
        for t in nodes:
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if not t.inputs:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for parent, pg in zip(t.inputs, self._rule(t, g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
