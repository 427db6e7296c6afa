"""
Autograd engine + a tiny finite-difference test-suite at the bottom
(run `python this_file.py`).  I wrote the checks first and then the ops.
"""
import contextlib

import torch

_enabled = True


@contextlib.contextmanager
def no_grad():
    global _enabled
    before = _enabled
    _enabled = False
    try:
        yield
    finally:
        _enabled = before


def _fit(g, shape):
    """Sum a broadcast gradient back down to `shape`."""
    g = g.sum(dim=tuple(range(g.dim() - len(shape)))) if g.dim() > len(shape) else g
    dims = [d for d, n in enumerate(shape) if n == 1 and g.shape[d] != 1]
    return g.sum(dim=dims, keepdim=True) if dims else g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._local_grads = None   # g_out -> tuple(g_parent, ...)

    def __repr__(self):
        return f"Tensor({self.data!r}, requires_grad={self.requires_grad})"

    @classmethod
    def _op(cls, data, parents, local_grads):
        out = cls(data)
        if _enabled and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents = parents
            out._local_grads = local_grads
        return out

    def _other(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    # ---- core --------------------------------------------------------------------
    def __add__(self, other):
        other = self._other(other)
        sa, sb = self.data.shape, other.data.shape
        return Tensor._op(self.data + other.data, (self, other), lambda g: (_fit(g, sa), _fit(g, sb)))

    def __mul__(self, other):
        other = self._other(other)
        a, b = self.data, other.data
        return Tensor._op(a * b, (self, other), lambda g: (_fit(g * b, a.shape), _fit(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._op(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        pos = self.data > 0
        return Tensor._op(self.data * pos, (self,), lambda g: (g * pos,))

    def sum(self):
        shape = self.data.shape
        return Tensor._op(self.data.sum(), (self,), lambda g: (g * torch.ones(shape, dtype=g.dtype),))

    # ---- numbers & extensions -----------------------------------------------------
    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __neg__(self):
        return Tensor._op(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-self._other(other))

    def __rsub__(self, other):
        return self._other(other) - self

    def __truediv__(self, other):
        other = self._other(other)
        a, b = self.data, other.data
        return Tensor._op(a / b, (self, other),
                          lambda g: (_fit(g / b, a.shape), _fit(-g * a / (b * b), b.shape)))

    def __rtruediv__(self, other):
        return self._other(other) / self

    def exp(self):
        e = self.data.exp()
        return Tensor._op(e, (self,), lambda g: (g * e,))

    def log(self):
        x = self.data
        return Tensor._op(x.log(), (self,), lambda g: (g / x,))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return Tensor._op(self.data.mean(), (self,), lambda g: (g * torch.ones(shape, dtype=g.dtype) / n,))

    @property
    def T(self):
        return Tensor._op(self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, shape):
        old = self.data.shape
        return Tensor._op(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def avg_pool2d(self, k):
        N, C, H, W = self.data.shape
        Ho, Wo = H // k, W // k
        x = self.data[:, :, :Ho * k, :Wo * k].reshape(N, C, Ho, k, Wo, k)
        out = x.mean(dim=(3, 5))

        def local(g):
            gx = torch.zeros(N, C, H, W, dtype=g.dtype)
            gx[:, :, :Ho * k, :Wo * k] = (g[:, :, :, None, :, None] / (k * k)).expand(
                N, C, Ho, k, Wo, k).reshape(N, C, Ho * k, Wo * k)
            return (gx,)
        return Tensor._op(out, (self,), local)

    def max_pool2d(self, k):
        raise NotImplementedError("max_pool2d: TODO")

    def conv2d(self, weight):
        raise NotImplementedError("conv2d: TODO")

    def cross_entropy(self, target):
        """softmax + NLL, averaged over the batch. target: int64 class ids (N,)."""
        N = self.data.shape[0]
        e = torch.exp(self.data)
        probs = e / e.sum(dim=1, keepdim=True)
        rows = torch.arange(N)
        loss = -torch.log(probs[rows, target]).mean()

        def local(g):
            d = probs.clone()
            d[rows, target] -= 1
            return (g * d / N,)
        return Tensor._op(loss, (self,), local)

    # ---- backward -------------------------------------------------------------------
    def _graph(self):
        """Post-order (inputs before outputs) without recursion."""
        done = {}            # insertion-ordered: id -> node, in post-order
        opened = set()
        stack = [self]
        while stack:
            node = stack[-1]
            if id(node) in done:
                stack.pop()
            elif id(node) in opened:
                done[id(node)] = node
                stack.pop()
            else:
                opened.add(id(node))
                stack.extend(p for p in node._parents if p.requires_grad and id(p) not in done)
        return list(done.values())

    def backward(self, grad=None):
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(self._graph()):
            g = grads.pop(id(node))
            if node._local_grads is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for p, gp in zip(node._parents, node._local_grads(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + gp if id(p) in grads else gp
            node._parents, node._local_grads = (), None


# ======================================================================================
# self-checks: compare every gradient with central finite differences
# ======================================================================================
def _numeric_grad(f, x, eps=1e-6):
    g = torch.zeros_like(x)
    flat, gflat = x.view(-1), g.view(-1)
    for i in range(flat.numel()):
        old = flat[i].item()
        flat[i] = old + eps
        hi = f(x).item()
        flat[i] = old - eps
        lo = f(x).item()
        flat[i] = old
        gflat[i] = (hi - lo) / (2 * eps)
    return g


def _check(name, build, *shapes, positive=False):
    torch.manual_seed(0)
    xs = [torch.randn(*s, dtype=torch.float64) for s in shapes]
    if positive:
        xs = [x.abs() + 0.5 for x in xs]
    ts = [Tensor(x.clone(), requires_grad=True) for x in xs]
    build(*ts).backward()
    for i, (x, t) in enumerate(zip(xs, ts)):
        def f(v, i=i):
            args = [Tensor(v if j == i else xs[j]) for j in range(len(xs))]
            return build(*args).data
        num = _numeric_grad(f, x.clone())
        ok = torch.allclose(t.grad, num, atol=1e-5)
        print(f"{'ok ' if ok else 'BAD'} {name} arg{i}")


if __name__ == "__main__":
    _check("add", lambda a, b: (a + b).sum(), (2, 3), (2, 3))
    _check("mul", lambda a, b: (a * b).sum(), (2, 3), (2, 3))
    _check("matmul", lambda a, b: (a @ b).sum(), (2, 3), (3, 4))
    _check("relu", lambda a: a.relu().sum(), (3, 3))
    _check("reuse", lambda a, b: (a * b + a * a).sum(), (2, 2), (2, 2))
    _check("bcast", lambda a, b: (a * b + b).sum(), (4, 3), (1, 3))
    _check("div", lambda a, b: (a / b).sum(), (2, 3), (2, 3), positive=True)
    _check("log/exp", lambda a: (a.log() + a.exp()).mean(), (3,), positive=True)
    _check("avg_pool", lambda a: a.avg_pool2d(2).sum(), (1, 2, 4, 4))
    _check("cross_entropy", lambda a: a.cross_entropy(torch.tensor([0, 2, 1])), (3, 4))
