"""Layer-style ops: each op is an object with `forward(*arrays)` and `backward(grad)`
that keeps its own cache; the Tensor holds the op object and its inputs."""

import torch


def _unbroadcast(g, shape):
    dims = g.dim() - len(shape)
    g = g.sum(dim=list(range(dims))) if dims > 0 else g
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(dim=i, keepdim=True)
    return g


class Op:
    def forward(self, *xs):
        raise NotImplementedError

    def backward(self, grad):
        raise NotImplementedError


class AddOp(Op):
    def forward(self, a, b):
        self.sa, self.sb = a.shape, b.shape
        return a + b

    def backward(self, grad):
        return _unbroadcast(grad, self.sa), _unbroadcast(grad, self.sb)


class MulOp(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, grad):
        return _unbroadcast(grad * self.b, self.a.shape), _unbroadcast(grad * self.a, self.b.shape)


class MatMulOp(Op):
    def forward(self, a, b):
        self.a, self.b = a, b
        return a @ b

    def backward(self, grad):
        return grad @ self.b.T, self.a.T @ grad


class ReluOp(Op):
    def forward(self, x):
        self.mask = x > 0
        return x * self.mask

    def backward(self, grad):
        return (grad * self.mask,)


class SumOp(Op):
    def forward(self, x):
        self.x_shape = x.shape
        return x.sum()

    def backward(self, grad):
        return (torch.ones(self.x_shape, dtype=grad.dtype) * grad,)


class ExpOp(Op):
    def forward(self, x):
        self.x = x
        return torch.exp(x)

    def backward(self, grad):
        return (grad * self.x,)


class LogOp(Op):
    def forward(self, x):
        self.x = x
        return torch.log(x)

    def backward(self, grad):
        return (grad / self.x,)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = None
        self.inputs = ()

    def _run(self, op, *inputs):
        out = Tensor(op.forward(*(t.data for t in inputs)))
        if any(t.requires_grad for t in inputs):
            out.requires_grad, out.op, out.inputs = True, op, inputs
        return out

    def _as(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, o): return self._run(AddOp(), self, self._as(o))
    def __radd__(self, o): return self._run(AddOp(), self._as(o), self)
    def __mul__(self, o): return self._run(MulOp(), self, self._as(o))
    def __rmul__(self, o): return self._run(MulOp(), self._as(o), self)
    def __matmul__(self, o): return self._run(MatMulOp(), self, o)
    def relu(self): return self._run(ReluOp(), self)
    def sum(self): return self._run(SumOp(), self)
    def exp(self): return self._run(ExpOp(), self)
    def log(self): return self._run(LogOp(), self)

    def backward(self, grad=None):
        topo, state = [], {}
        stack = [self]
        while stack:
            t = stack[-1]
            if state.get(id(t)) is None:
                state[id(t)] = "open"
                stack.extend(i for i in t.inputs if id(i) not in state)
            else:
                stack.pop()
                if state[id(t)] == "open":
                    state[id(t)] = "closed"
                    topo.append(t)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(topo):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.op is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for i, ig in zip(t.inputs, t.op.backward(g)):
                if i.requires_grad:
                    grads[id(i)] = grads[id(i)] + ig if id(i) in grads else ig
            t.op, t.inputs = None, ()
