"""Ops live in one dispatch table: name -> (forward, backward). A tensor remembers the
op's name, its inputs and what the forward saved. Backward is an iterative post-order
DFS with an explicit stack."""

import torch


def _unbroadcast(g, shape):
    if g.shape == shape:
        return g
    extra = g.dim() - len(shape)
    dims = list(range(extra)) + [extra + i for i, s in enumerate(shape) if s == 1]
    return g.sum(dim=dims, keepdim=True).reshape(shape)


def _add_fwd(a, b):
    return a + b, (a.shape, b.shape)


def _add_bwd(saved, g):
    sa, sb = saved
    return _unbroadcast(g, sa), _unbroadcast(g, sb)


def _mul_fwd(a, b):
    return a * b, (a, b)


def _mul_bwd(saved, g):
    a, b = saved
    return _unbroadcast(g * b, a.shape), _unbroadcast(g * a, b.shape)


def _matmul_fwd(a, b):
    return a @ b, (a, b)


def _matmul_bwd(saved, g):
    a, b = saved
    return g @ b.transpose(0, 1), a.transpose(0, 1) @ g


def _relu_fwd(a):
    return a.clamp_min(0), (a > 0,)


def _relu_bwd(saved, g):
    (mask,) = saved
    return (g * mask,)


def _sum_fwd(a):
    return a.sum(), (a.shape,)


def _sum_bwd(saved, g):
    (shape,) = saved
    return (g * torch.ones(shape, dtype=g.dtype),)


def _neg_fwd(a):
    return -a, ()


def _neg_bwd(saved, g):
    return (-g,)


def _sub_fwd(a, b):
    return a - b, (a.shape, b.shape)


def _sub_bwd(saved, g):
    sa, sb = saved
    return _unbroadcast(g, sa), _unbroadcast(-g, sb)


def _div_fwd(a, b):
    return a / b, (a, b)


def _div_bwd(saved, g):
    a, b = saved
    return _unbroadcast(g / b, a.shape), _unbroadcast(-g * a / b ** 2, b.shape)


def _exp_fwd(a):
    y = a.exp()
    return y, (y,)


def _exp_bwd(saved, g):
    return (g * saved[0],)


def _log_fwd(a):
    return a.log(), (a,)


def _log_bwd(saved, g):
    return (g / saved[0],)


def _mean_fwd(a):
    return a.mean(), (a.shape, a.numel())


def _mean_bwd(saved, g):
    shape, n = saved
    return (g.expand(shape) / n,)


def _reshape_fwd(a, shape):
    return a.reshape(shape), (a.shape,)


def _reshape_bwd(saved, g):
    return (g.reshape(saved[0]),)


def _transpose_fwd(a):
    return a.t(), ()


def _transpose_bwd(saved, g):
    return (g.t(),)


OPS = {
    "add": (_add_fwd, _add_bwd),
    "mul": (_mul_fwd, _mul_bwd),
    "matmul": (_matmul_fwd, _matmul_bwd),
    "relu": (_relu_fwd, _relu_bwd),
    "sum": (_sum_fwd, _sum_bwd),
    "neg": (_neg_fwd, _neg_bwd),
    "sub": (_sub_fwd, _sub_bwd),
    "div": (_div_fwd, _div_bwd),
    "exp": (_exp_fwd, _exp_bwd),
    "log": (_log_fwd, _log_bwd),
    "mean": (_mean_fwd, _mean_bwd),
    "reshape": (_reshape_fwd, _reshape_bwd),
    "transpose": (_transpose_fwd, _transpose_bwd),
}


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = None
        self.inputs = ()
        self.saved = None

    def _apply(self, name, *others, **kwargs):
        inputs = (self,) + tuple(o if isinstance(o, Tensor) else Tensor(torch.tensor(o, dtype=self.data.dtype))
                                 for o in others)
        forward, _ = OPS[name]
        data, saved = forward(*(t.data for t in inputs), **kwargs)
        out = Tensor(data, requires_grad=any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out.op, out.inputs, out.saved = name, inputs, saved
        return out

    def __add__(self, o): return self._apply("add", o)
    def __radd__(self, o): return self._apply("add", o)
    def __mul__(self, o): return self._apply("mul", o)
    def __rmul__(self, o): return self._apply("mul", o)
    def __matmul__(self, o): return self._apply("matmul", o)
    def relu(self): return self._apply("relu")
    def sum(self): return self._apply("sum")
    def __neg__(self): return self._apply("neg")
    def __sub__(self, o): return self._apply("sub", o)
    def __rsub__(self, o): return -self._apply("sub", o)
    def __truediv__(self, o): return self._apply("div", o)
    def exp(self): return self._apply("exp")
    def log(self): return self._apply("log")
    def mean(self): return self._apply("mean")
    def reshape(self, shape): return self._apply("reshape", shape=tuple(shape))

    @property
    def T(self):
        return self._apply("transpose")

    def backward(self, grad=None):
        order, seen = [], set()
        stack = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)      # every input of node is already in order
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for parent in node.inputs:
                if id(parent) not in seen:
                    stack.append((parent, False))
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node.op is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            _, backward = OPS[node.op]
            for parent, pg in zip(node.inputs, backward(node.saved, g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
            node.inputs, node.saved = (), None
