"""tinygrad-style: an op is a Function *instance* that keeps its parents and whatever
the forward saved; the result's `_ctx` points at it. Backward sorts by DFS (with
deep graphs in mind, iteratively) and calls `ctx.backward(grad)`."""

import torch


def _unbroadcast(g, shape):
    if tuple(g.shape) == tuple(shape):
        return g
    return g.sum_to_size(shape) if len(shape) else g.sum()


class Function:
    def __init__(self, *tensors):
        self.parents = tensors
        self.needs_input_grad = [t.requires_grad for t in tensors]
        self.requires_grad = any(self.needs_input_grad)

    @classmethod
    def apply(cls, *tensors, **kwargs):
        ctx = cls(*tensors)
        out = Tensor(ctx.forward(*[t.data for t in tensors], **kwargs), requires_grad=ctx.requires_grad)
        if ctx.requires_grad:
            out._ctx = ctx
        return out


class Add(Function):
    def forward(self, x, y):
        self.shapes = x.shape, y.shape
        return x + y

    def backward(self, g):
        return _unbroadcast(g, self.shapes[0]), _unbroadcast(g, self.shapes[1])


class Mul(Function):
    def forward(self, x, y):
        self.x, self.y = x, y
        return x * y

    def backward(self, g):
        return _unbroadcast(g * self.y, self.x.shape), _unbroadcast(g * self.x, self.y.shape)


class Dot(Function):
    def forward(self, x, w):
        self.x, self.w = x, w
        return x @ w

    def backward(self, g):
        return g @ self.w.T, self.x.T @ g


class Relu(Function):
    def forward(self, x):
        self.x = x
        return x.relu()

    def backward(self, g):
        return (g * (self.x > 0),)


class Sum(Function):
    def forward(self, x):
        self.shape = x.shape
        return x.sum()

    def backward(self, g):
        return (g.expand(self.shape).clone(),)


class Log(Function):
    def forward(self, x):
        self.ret = x.log()
        return self.ret

    def backward(self, g):
        return (g / self.ret,)


class Exp(Function):
    def forward(self, x):
        self.ret = x.exp()
        return self.ret

    def backward(self, g):
        return (g * self.ret,)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._ctx = None

    def _c(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, x): return Add.apply(self, self._c(x))
    def __radd__(self, x): return Add.apply(self._c(x), self)
    def __mul__(self, x): return Mul.apply(self, self._c(x))
    def __rmul__(self, x): return Mul.apply(self._c(x), self)
    def __neg__(self): return self * -1
    def __sub__(self, x): return self + -self._c(x)
    def __rsub__(self, x): return self._c(x) + -self
    def __matmul__(self, x): return Dot.apply(self, x)
    def relu(self): return Relu.apply(self)
    def sum(self): return Sum.apply(self)
    def log(self): return Log.apply(self)
    def exp(self): return Exp.apply(self)

    def deepwalk(self):
        nodes, visited = [], set()
        stack = [(self, False)]
        while stack:
            node, processed = stack.pop()
            if processed:
                nodes.append(node)
                continue
            if id(node) in visited:
                continue
            visited.add(id(node))
            stack.append((node, True))
            if node._ctx:
                stack.extend((p, False) for p in node._ctx.parents if id(p) not in visited)
        return nodes

    def backward(self, grad=None):
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(self.deepwalk()):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._ctx is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg, needed in zip(t._ctx.parents, t._ctx.backward(g), t._ctx.needs_input_grad):
                if needed:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            t._ctx = None
