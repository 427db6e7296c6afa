import contextlib

import torch

_state = {"grad": True}


@contextlib.contextmanager
def no_grad():
    saved = _state["grad"]
    _state["grad"] = False
    try:
        yield
    finally:
        _state["grad"] = saved


def _to_shape(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(d, keepdim=True)
    return g


class ElementwiseMeta(type):
    """Writes __op__, __rop__ for every entry of the class's BINARY table.

    BINARY[name] = (forward(a, b), dL/da(g, a, b), dL/db(g, a, b))
    """

    def __new__(mcls, name, bases, ns):
        cls = super().__new__(mcls, name, bases, ns)
        for op, (fwd, da, db) in ns.get("BINARY", {}).items():
            setattr(cls, f"__{op}__", mcls._forward(op, fwd, da, db, reflected=False))
            setattr(cls, f"__r{op}__", mcls._forward(op, fwd, da, db, reflected=True))
        return cls

    @staticmethod
    def _forward(op, fwd, da, db, reflected):
        def method(self, other):
            other = self._wrap(other)
            a, b = (other, self) if reflected else (self, other)
            x, y = a.data, b.data

            def vjp(g):
                return _to_shape(da(g, x, y), x.shape), _to_shape(db(g, x, y), y.shape)

            return a._result(fwd(x, y), (a, b), vjp)

        method.__name__ = f"__{'r' if reflected else ''}{op}__"
        return method


class Tensor(metaclass=ElementwiseMeta):
    BINARY = {
        "add": (torch.add, lambda g, a, b: g, lambda g, a, b: g),
        "sub": (torch.sub, lambda g, a, b: g, lambda g, a, b: -g),
        "mul": (torch.mul, lambda g, a, b: g * b, lambda g, a, b: g * a),
        "truediv": (torch.div, lambda g, a, b: g / b, lambda g, a, b: -g * a / (b * b)),
    }

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._vjp = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def _wrap(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def _result(self, data, parents, vjp):
        out = Tensor(data)
        if _state["grad"] and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents = parents
            out._vjp = vjp
        return out

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        out = self.data
        out[out < 0] = 0
        return self._result(out, (self,), lambda g: (g * (out > 0),))

    def sum(self):
        shape = self.data.shape
        return self._result(self.data.sum(), (self,), lambda g: (torch.full(shape, 1.0, dtype=g.dtype) * g,))

    def __neg__(self):
        return self._result(-self.data, (self,), lambda g: (-g,))

    def __pow__(self, p):
        x = self.data
        return self._result(x ** p, (self,), lambda g: (p * x ** (p - 1) * g,))

    def exp(self):
        e = self.data.exp()
        return self._result(e, (self,), lambda g: (e * g,))

    def log(self):
        x = self.data
        return self._result(x.log(), (self,), lambda g: (g / x,))

    def tanh(self):
        t = self.data.tanh()
        return self._result(t, (self,), lambda g: ((1 - t * t) * g,))

    def sigmoid(self):
        s = self.data.sigmoid()
        return self._result(s, (self,), lambda g: (s * (1 - s) * g,))

    def mean(self):
        n = self.data.numel()
        shape = self.data.shape
        return self._result(self.data.mean(), (self,), lambda g: (torch.full(shape, 1.0 / n, dtype=g.dtype) * g,))

    @property
    def T(self):
        return self._result(self.data.T, (self,), lambda g: (g.T,))

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        m = z.max(dim=1, keepdim=True).values
        logp = z - m - (z - m).exp().sum(dim=1, keepdim=True).log()
        idx = torch.arange(n)

        def vjp(g):
            d = logp.exp()
            d[idx, target] -= 1
            return (d * (g / n),)

        return self._result(-logp[idx, target].mean(), (self,), vjp)

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("tensor does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad must be specified for non-scalar outputs")
            grad = torch.ones_like(self.data)
        # three-state DFS without recursion: 0 = new, 1 = open, 2 = closed
        state, order, stack = {self: 1}, [], [self]
        while stack:
            t = stack[-1]
            child = next((p for p in t._parents if p.requires_grad and p not in state), None)
            if child is None:
                state[t] = 2
                order.append(stack.pop())
            else:
                state[child] = 1
                stack.append(child)
        grads = {self: grad.to(self.data.dtype)}
        for t in reversed(order):
            g = grads.pop(t)
            t.grad = g.clone() if t.grad is None else t.grad + g
            if t._vjp is not None:
                for p, gp in zip(t._parents, t._vjp(g)):
                    if p.requires_grad:
                        grads[p] = grads[p] + gp if p in grads else gp
            t._parents, t._vjp = (), None
