import torch
from contextlib import contextmanager

ON = [True]  # grad recording switch


@contextmanager
def no_grad():
    o = ON[0]; ON[0] = False
    try: yield
    finally: ON[0] = o


def red(g, s):  # sum g down to shape s
    while g.dim() > len(s): g = g.sum(0)
    for i, n in enumerate(s):
        if n == 1 and g.shape[i] > 1: g = g.sum(i, keepdim=True)
    return g


def C(x, like):
    return x if isinstance(x, Tensor) else Tensor(torch.tensor(float(x), dtype=like.data.dtype))


class Tensor:
    def __init__(s, data, requires_grad=False):
        s.data, s.requires_grad, s.grad = data, requires_grad, None
        s.p, s.f = (), None  # parents, vjp: g -> tuple of parent grads

    def _n(s, d, ps, f):
        t = Tensor(d, any(p.requires_grad for p in ps))
        if ON[0] and t.requires_grad: t.p, t.f = ps, f
        return t

    def __add__(a, b):
        b = C(b, a); sa, sb = a.data.shape, b.data.shape
        return a._n(a.data + b.data, (a, b), lambda g: (red(g, sa), red(g, sb)))

    def __mul__(a, b):
        b = C(b, a); x, y = a.data, b.data
        return a._n(x * y, (a, b), lambda g: (red(g * y, x.shape), red(g * x, y.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(a, b):
        x, y = a.data, b.data
        return a._n(x @ y, (a, b), lambda g: (g @ y.T, x.T @ g))

    def relu(a):
        m = a.data > 0
        return a._n(a.data * m, (a,), lambda g: (g * m,))

    def sum(a):
        sh = a.data.shape
        return a._n(a.data.sum(), (a,), lambda g: (g.expand(sh).clone(),))

    def __neg__(a): return a * -1.0
    def __sub__(a, b): return a + -C(b, a)
    def __rsub__(a, b): return C(b, a) + -a

    def exp(a):
        e = a.data.exp()
        return a._n(e, (a,), lambda g: (g * e,))

    def log(a):
        x = a.data
        return a._n(x.log(), (a,), lambda g: (g / x,))

    def tanh(a):
        t = a.data.tanh()
        return a._n(t, (a,), lambda g: (g * (1 - t * t),))

    def sigmoid(a):
        q = a.data.sigmoid()
        return a._n(q, (a,), lambda g: (g * q * (1 - q),))

    def mean(a):
        sh, n = a.data.shape, a.data.numel()
        return a._n(a.data.mean(), (a,), lambda g: (g.expand(sh) / n,))

    @property
    def T(a): return a._n(a.data.T, (a,), lambda g: (g.T,))

    def reshape(a, sh):
        o = a.data.shape
        return a._n(a.data.reshape(sh), (a,), lambda g: (g.reshape(o),))

    def maximum(a, b):
        b = C(b, a); x, y = a.data, b.data
        w = (x > y).to(x.dtype) + (x == y).to(x.dtype) / 2
        return a._n(torch.maximum(x, y), (a, b), lambda g: (red(g * w, x.shape), red(g * (1 - w), y.shape)))

    def backward(s, grad=None):
        # iterative postorder
        o, st, v = [], [(s, 0)], set()
        while st:
            n, k = st.pop()
            if k: o.append(n); continue
            if id(n) in v: continue
            v.add(id(n)); st.append((n, 1))
            st += [(q, 0) for q in n.p if q.requires_grad and id(q) not in v]
        G = {id(s): torch.ones_like(s.data) if grad is None else grad}
        for n in reversed(o):
            g = G.pop(id(n))
            if n.f is None:
                n.grad = g.clone() if n.grad is None else n.grad + g
                continue
            for q, gq in zip(n.p, n.f(g)):
                if q.requires_grad: G[id(q)] = G[id(q)] + gq if id(q) in G else gq
            n.p, n.f = (), None
