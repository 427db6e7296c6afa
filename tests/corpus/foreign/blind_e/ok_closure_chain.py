import torch


class _GradSwitch:
    depth = 0


class no_grad:
    def __enter__(self):
        _GradSwitch.depth += 1
        return self

    def __exit__(self, *exc):
        _GradSwitch.depth -= 1
        return False


def _fit(g, shape):
    # sum away the axes broadcasting added or stretched
    while g.dim() > len(shape):
        g = g.sum(0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._vjp = None

    def _lift(self, x):
        if isinstance(x, Tensor):
            return x
        return Tensor(torch.as_tensor(x, dtype=self.data.dtype))

    def _make(self, data, parents, vjp):
        out = Tensor(data)
        if _GradSwitch.depth == 0 and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents = parents
            out._vjp = vjp
        return out

    # --- binary ---
    def __add__(self, other):
        other = self._lift(other)
        a, b = self, other
        return self._make(a.data + b.data, (a, b),
                          lambda g: (_fit(g, a.data.shape), _fit(g, b.data.shape)))

    __radd__ = __add__

    def __mul__(self, other):
        other = self._lift(other)
        x, y = self.data, other.data
        return self._make(x * y, (self, other),
                          lambda g: (_fit(g * y, x.shape), _fit(g * x, y.shape)))

    __rmul__ = __mul__

    def __sub__(self, other):
        other = self._lift(other)
        sa, sb = self.data.shape, other.data.shape
        return self._make(self.data - other.data, (self, other),
                          lambda g: (_fit(g, sa), _fit(-g, sb)))

    def __rsub__(self, other):
        return self._lift(other) - self

    def __truediv__(self, other):
        other = self._lift(other)
        x, y = self.data, other.data
        return self._make(x / y, (self, other),
                          lambda g: (_fit(g / y, x.shape), _fit(-g * x / (y * y), y.shape)))

    def __rtruediv__(self, other):
        return self._lift(other) / self

    def __matmul__(self, other):
        x, y = self.data, other.data
        return self._make(x @ y, (self, other), lambda g: (g @ y.T, x.T @ g))

    def maximum(self, other):
        other = self._lift(other)
        x, y = self.data, other.data

        def vjp(g):
            share = (x > y).double().to(g.dtype) + 0.5 * (x == y).to(g.dtype)
            return _fit(g * share, x.shape), _fit(g * (1 - share), y.shape)

        return self._make(torch.maximum(x, y), (self, other), vjp)

    # --- unary ---
    def __neg__(self):
        return self._make(-self.data, (self,), lambda g: (-g,))

    def __pow__(self, p):
        x = self.data
        return self._make(x ** p, (self,), lambda g: (g * p * x ** (p - 1),))

    def relu(self):
        keep = self.data > 0
        return self._make(self.data * keep, (self,), lambda g: (g * keep,))

    def exp(self):
        e = torch.exp(self.data)
        return self._make(e, (self,), lambda g: (g * e,))

    def log(self):
        x = self.data
        return self._make(torch.log(x), (self,), lambda g: (g / x,))

    def tanh(self):
        t = torch.tanh(self.data)
        return self._make(t, (self,), lambda g: (g * (1 - t * t),))

    def sigmoid(self):
        s = torch.sigmoid(self.data)
        return self._make(s, (self,), lambda g: (g * s * (1 - s),))

    def sum(self):
        shape = self.data.shape
        return self._make(self.data.sum(), (self,), lambda g: (g * torch.ones(shape, dtype=g.dtype),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return self._make(self.data.mean(), (self,), lambda g: (g * torch.ones(shape, dtype=g.dtype) / n,))

    @property
    def T(self):
        return self._make(self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, shape):
        old = self.data.shape
        return self._make(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        z = z - z.max(dim=1, keepdim=True).values
        logp = z - torch.logsumexp(z, dim=1, keepdim=True)
        rows = torch.arange(n)
        loss = -logp[rows, target].sum() / n

        def vjp(g):
            d = torch.exp(logp)
            d[rows, target] -= 1.0
            return (g * d / n,)

        return self._make(loss, (self,), vjp)

    # --- backward ---
    def backward(self, grad=None):
        topo = []
        mark = set()
        todo = [(self, 0)]
        while todo:
            t, i = todo.pop()
            if i < len(t._parents):
                todo.append((t, i + 1))
                p = t._parents[i]
                if p.requires_grad and id(p) not in mark:
                    mark.add(id(p))
                    todo.append((p, 0))
            else:
                topo.append(t)
        pending = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(topo):
            g = pending.pop(id(t), None)
            if g is None:
                continue
            if t._vjp is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, gp in zip(t._parents, t._vjp(g)):
                if p.requires_grad:
                    pending[id(p)] = gp if id(p) not in pending else pending[id(p)] + gp
            t._parents, t._vjp = (), None
