# Reverse-mode AD, Zygote-style: every primal op returns its value together with a
# *pullback* ℬ: Δout -> (Δin_1, Δin_2, ...). backward() just composes the pullbacks
# in reverse topological order and accumulates the cotangents (Δ) per node.
#
# (I mostly write Julia, so: Δ = cotangent, ℬ = pullback, `x̄` = gradient of x.)

import contextlib

import torch
import torch.nn.functional as F

_RECORDING = [True]


@contextlib.contextmanager
def no_grad():
    old = _RECORDING[0]
    _RECORDING[0] = False
    try:
        yield
    finally:
        _RECORDING[0] = old


def unbroadcast(Δ, shape):
    """Sum a cotangent back to `shape` (the adjoint of broadcasting)."""
    while Δ.dim() > len(shape):
        Δ = Δ.sum(0)
    for d, n in enumerate(shape):
        if n == 1 and Δ.shape[d] != 1:
            Δ = Δ.sum(d, keepdim=True)
    return Δ


def as_tensor(x, like):
    return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=like.data.dtype))


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.args = ()        # the Tensors this one was computed from
        self.ℬ = None         # pullback: Δ -> tuple of Δs, one per arg

    @staticmethod
    def lift(y, args, ℬ):
        """Wrap primal output `y`; record (args, ℬ) if anything needs a gradient."""
        t = Tensor(y)
        if _RECORDING[0] and any(a.requires_grad for a in args):
            t.requires_grad = True
            t.args = tuple(args)
            t.ℬ = ℬ
        return t

    # ------------------------------------------------------------------ core
    def __add__(self, other):
        other = as_tensor(other, self)
        sa, sb = self.data.shape, other.data.shape
        return Tensor.lift(self.data + other.data, (self, other),
                           lambda Δ: (unbroadcast(Δ, sa), unbroadcast(Δ, sb)))

    def __mul__(self, other):
        other = as_tensor(other, self)
        a, b = self.data, other.data
        return Tensor.lift(a * b, (self, other),
                           lambda Δ: (unbroadcast(Δ * b, a.shape), unbroadcast(Δ * a, b.shape)))

    def __matmul__(self, other):
        A, B = self.data, other.data
        return Tensor.lift(A @ B, (self, other), lambda Δ: (Δ @ B.T, A.T @ Δ))

    def relu(self):
        keep = self.data > 0
        return Tensor.lift(torch.where(keep, self.data, torch.zeros_like(self.data)), (self,),
                           lambda Δ: (Δ * keep,))

    def sum(self):
        s = self.data.shape
        return Tensor.lift(self.data.sum(), (self,), lambda Δ: (Δ * torch.ones(s, dtype=Δ.dtype),))

    # ------------------------------------------------------------ extensions
    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __neg__(self):
        return Tensor.lift(-self.data, (self,), lambda Δ: (-Δ,))

    def __sub__(self, other):
        return self + (-as_tensor(other, self))

    def __rsub__(self, other):
        return as_tensor(other, self) + (-self)

    def __truediv__(self, other):
        other = as_tensor(other, self)
        a, b = self.data, other.data
        return Tensor.lift(a / b, (self, other),
                           lambda Δ: (unbroadcast(Δ / b, a.shape), unbroadcast(-Δ * a / b**2, b.shape)))

    def __rtruediv__(self, other):
        return as_tensor(other, self) / self

    def __pow__(self, p):
        x = self.data
        return Tensor.lift(x ** p, (self,), lambda Δ: (Δ * p * x ** (p - 1),))

    def exp(self):
        y = self.data.exp()
        return Tensor.lift(y, (self,), lambda Δ: (Δ * y,))

    def log(self):
        x = self.data
        return Tensor.lift(x.log(), (self,), lambda Δ: (Δ / x,))

    def tanh(self):
        y = self.data.tanh()
        return Tensor.lift(y, (self,), lambda Δ: (Δ * (1 - y**2),))

    def sigmoid(self):
        y = 1 / (1 + torch.exp(-self.data))
        return Tensor.lift(y, (self,), lambda Δ: (Δ * y * (1 - y),))

    def mean(self):
        s, n = self.data.shape, self.data.numel()
        return Tensor.lift(self.data.mean(), (self,),
                           lambda Δ: (Δ * torch.ones(s, dtype=Δ.dtype) / n,))

    @property
    def T(self):
        return Tensor.lift(self.data.T, (self,), lambda Δ: (Δ.T,))

    def reshape(self, shape):
        s = self.data.shape
        return Tensor.lift(self.data.reshape(shape), (self,), lambda Δ: (Δ.reshape(s),))

    def maximum(self, other):
        other = as_tensor(other, self)
        a, b = self.data, other.data
        wa = torch.where(a > b, 1.0, torch.where(a == b, 0.5, 0.0)).to(a.dtype)
        return Tensor.lift(torch.maximum(a, b), (self, other),
                           lambda Δ: (unbroadcast(Δ * wa, a.shape), unbroadcast(Δ * (1 - wa), b.shape)))

    def _windows(self, k):
        N, C, H, W = self.data.shape
        h, w = H // k, W // k
        x = self.data[:, :, : h * k, : w * k]
        return x.reshape(N, C, h, k, w, k).permute(0, 1, 2, 4, 3, 5).reshape(N, C, h, w, k * k)

    def _unwindow(self, win, k):
        N, C, H, W = self.data.shape
        h, w = win.shape[2], win.shape[3]
        full = torch.zeros(N, C, H, W, dtype=win.dtype)
        full[:, :, : h * k, : w * k] = (
            win.reshape(N, C, h, w, k, k).permute(0, 1, 2, 4, 3, 5).reshape(N, C, h * k, w * k))
        return full

    def max_pool2d(self, k):
        win = self._windows(k)
        y, idx = win.max(dim=-1)
        onehot = F.one_hot(idx, k * k).to(win.dtype)   # first maximum wins a tie
        return Tensor.lift(y, (self,), lambda Δ: (self._unwindow(onehot * Δ[..., None], k),))

    def avg_pool2d(self, k):
        win = self._windows(k)
        y = win.mean(dim=-1)
        shape = win.shape
        return Tensor.lift(y, (self,),
                           lambda Δ: (self._unwindow(Δ[..., None].expand(shape) / (k * k), k),))

    def conv2d(self, weight):
        x, w = self.data, weight.data
        O, C, kh, kw = w.shape
        N, _, H, W = x.shape
        Ho, Wo = H - kh + 1, W - kw + 1
        y = torch.zeros(N, O, Ho, Wo, dtype=x.dtype)
        for i in range(kh):
            for j in range(kw):
                y += torch.einsum("nchw,oc->nohw", x[:, :, i:i + Ho, j:j + Wo], w[:, :, i, j])

        def ℬ(Δ):
            x̄, w̄ = torch.zeros_like(x), torch.zeros_like(w)
            for i in range(kh):
                for j in range(kw):
                    x̄[:, :, i:i + Ho, j:j + Wo] += torch.einsum("nohw,oc->nchw", Δ, w[:, :, i, j])
                    w̄[:, :, i, j] = torch.einsum("nohw,nchw->oc", Δ, x[:, :, i:i + Ho, j:j + Wo])
            return x̄, w̄
        return Tensor.lift(y, (self, weight), ℬ)

    def __getitem__(self, ids):
        W = self.data

        def ℬ(Δ):
            W̄ = torch.zeros_like(W)
            W̄.index_put_((ids,), Δ, accumulate=True)
            return (W̄,)
        return Tensor.lift(W[ids], (self,), ℬ)

    def batch_norm(self, eps=1e-5):
        x = self.data
        μ = x.mean(0, keepdim=True)
        σ2 = ((x - μ) ** 2).mean(0, keepdim=True)
        r = 1 / torch.sqrt(σ2 + eps)
        x̂ = (x - μ) * r

        def ℬ(Δ):
            return (r * (Δ - Δ.mean(0, keepdim=True) - x̂ * (Δ * x̂).mean(0, keepdim=True)),)
        return Tensor.lift(x̂, (self,), ℬ)

    def cross_entropy(self, target):
        z = self.data
        m = z.max(dim=1, keepdim=True).values
        logZ = m + (z - m).exp().sum(1, keepdim=True).log()
        logp = z - logZ
        N = z.shape[0]
        loss = -logp[torch.arange(N), target].mean()

        def ℬ(Δ):
            ḡ = logp.exp()
            ḡ[torch.arange(N), target] -= 1
            return (Δ * ḡ / N,)
        return Tensor.lift(loss, (self,), ℬ)

    # -------------------------------------------------------------- backward
    def _topo(self):
        """Post-order DFS without recursion (iterator frames), so 1e5-deep chains are fine."""
        order, seen = [], {id(self)}
        frames = [(self, iter(self.args))]
        while frames:
            node, it = frames[-1]
            nxt = next(it, None)
            if nxt is None:
                frames.pop()
                order.append(node)
            elif nxt.requires_grad and id(nxt) not in seen:
                seen.add(id(nxt))
                frames.append((nxt, iter(nxt.args)))
        return order

    def backward(self, grad=None):
        Δ0 = torch.ones_like(self.data) if grad is None else grad.to(self.data.dtype).reshape(self.data.shape)
        Δs = {id(self): Δ0}
        for node in reversed(self._topo()):
            Δ = Δs.pop(id(node))
            if node.ℬ is None:
                node.grad = Δ.clone() if node.grad is None else node.grad + Δ
                continue
            for arg, Δarg in zip(node.args, node.ℬ(Δ)):
                if arg.requires_grad:
                    Δs[id(arg)] = Δs[id(arg)] + Δarg if id(arg) in Δs else Δarg
            node.args, node.ℬ = (), None   # free the graph
