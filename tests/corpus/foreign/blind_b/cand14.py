"""
Autograd engine built the way the CS231n assignments structure layers:
every op is a pair of plain functions

    out, cache = op_forward(...)
    dx, ...    = op_backward(dout, cache)

and the Tensor class only wires them into a graph.
"""
import torch


# ============================================================================
# forward / backward pairs
# ============================================================================

def _unbroadcast(d, shape):
    while d.dim() > len(shape):
        d = d.sum(dim=0)
    for ax, n in enumerate(shape):
        if n == 1 and d.shape[ax] != 1:
            d = d.sum(dim=ax, keepdim=True)
    return d


def add_forward(x, y):
    return x + y, (x.shape, y.shape)


def add_backward(dout, cache):
    xs, ys = cache
    return _unbroadcast(dout, xs), _unbroadcast(dout, ys)


def mul_forward(x, y):
    return x * y, (x, y)


def mul_backward(dout, cache):
    x, y = cache
    return _unbroadcast(dout * y, x.shape), _unbroadcast(dout * x, y.shape)


def matmul_forward(x, w):
    return x @ w, (x, w)


def matmul_backward(dout, cache):
    x, w = cache
    dx = dout @ w.T
    dw = x.T @ dout
    return dx, dw


def relu_forward(x):
    out = torch.clamp(x, min=0)
    return out, x


def relu_backward(dout, cache):
    x = cache
    dx = dout.clone()
    dx[x <= 0] = 0
    return (dx,)


def sum_forward(x):
    return x.sum(), x.shape


def sum_backward(dout, cache):
    return (dout * torch.ones(cache, dtype=dout.dtype),)


def mean_forward(x):
    return x.mean(), (x.shape, x.numel())


def mean_backward(dout, cache):
    shape, n = cache
    return (dout * torch.ones(shape, dtype=dout.dtype) / n,)


def softmax_loss_forward(x, y):
    N = x.shape[0]
    shifted_logits = x - x.max(dim=1, keepdim=True).values
    Z = torch.exp(shifted_logits).sum(dim=1, keepdim=True)
    log_probs = shifted_logits - torch.log(Z)
    probs = torch.exp(log_probs)
    loss = -log_probs[torch.arange(N), y].sum() / N
    return loss, (probs, y)


def softmax_loss_backward(dout, cache):
    probs, y = cache
    N = probs.shape[0]
    dx = probs.clone()
    dx[torch.arange(N), y] -= 1
    dx /= N
    return (dx * dout,)


def batchnorm_forward(x, eps):
    mu = x.mean(dim=0)
    xmu = x - mu
    var = (xmu ** 2).mean(dim=0)
    ivar = 1.0 / torch.sqrt(var + eps)
    xhat = xmu * ivar
    return xhat, (xhat, ivar)


def batchnorm_backward(dout, cache):
    # the simplified expression from the "batchnorm_backward_alt" exercise
    xhat, ivar = cache
    N = dout.shape[0]
    dx = (1.0 / N) * ivar * (N * dout - dout.sum(dim=0) - xhat * (dout * xhat).sum(dim=0))
    return (dx,)


def avg_pool_forward(x, k):
    N, C, H, W = x.shape
    Ho, Wo = H // k, W // k
    out = torch.zeros(N, C, Ho, Wo, dtype=x.dtype)
    for i in range(Ho):
        for j in range(Wo):
            out[:, :, i, j] = x[:, :, i * k:(i + 1) * k, j * k:(j + 1) * k].mean(dim=(2, 3))
    return out, (x.shape, k)


def avg_pool_backward(dout, cache):
    shape, k = cache
    Ho, Wo = dout.shape[2], dout.shape[3]
    dx = torch.zeros(shape, dtype=dout.dtype)
    for i in range(Ho):
        for j in range(Wo):
            dx[:, :, i * k:(i + 1) * k, j * k:(j + 1) * k] += dout[:, :, i, j][:, :, None, None] / (k * k)
    return (dx,)


def max_pool_forward(x, k):
    N, C, H, W = x.shape
    Ho, Wo = H // k, W // k
    out = torch.zeros(N, C, Ho, Wo, dtype=x.dtype)
    argmax = torch.zeros(N, C, Ho, Wo, dtype=torch.long)
    for i in range(Ho):
        for j in range(Wo):
            window = x[:, :, i * k:(i + 1) * k, j * k:(j + 1) * k].reshape(N, C, k * k)
            out[:, :, i, j], argmax[:, :, i, j] = window.max(dim=2)
    return out, (x.shape, k, argmax)


def max_pool_backward(dout, cache):
    shape, k, argmax = cache
    N, C = shape[0], shape[1]
    Ho, Wo = dout.shape[2], dout.shape[3]
    dx = torch.zeros(shape, dtype=dout.dtype)
    for i in range(Ho):
        for j in range(Wo):
            dwin = torch.zeros(N, C, k * k, dtype=dout.dtype)
            dwin.scatter_(2, argmax[:, :, i, j][:, :, None], dout[:, :, i, j][:, :, None])
            dx[:, :, i * k:(i + 1) * k, j * k:(j + 1) * k] += dwin.reshape(N, C, k, k)
    return (dx,)


def conv_forward_naive(x, w):
    N, C, H, W = x.shape
    F, _, HH, WW = w.shape
    Ho, Wo = H - HH + 1, W - WW + 1
    out = torch.zeros(N, F, Ho, Wo, dtype=x.dtype)
    for i in range(Ho):
        for j in range(Wo):
            x_win = x[:, :, i:i + HH, j:j + WW]
            out[:, :, i, j] = torch.tensordot(x_win, w, dims=([1, 2, 3], [1, 2, 3]))
    return out, (x, w)


def conv_backward_naive(dout, cache):
    x, w = cache
    HH, WW = w.shape[2], w.shape[3]
    Ho, Wo = dout.shape[2], dout.shape[3]
    dx = torch.zeros_like(x)
    dw = torch.zeros_like(w)
    for i in range(Ho):
        for j in range(Wo):
            d = dout[:, :, i, j]                                   # (N, F)
            dx[:, :, i:i + HH, j:j + WW] += torch.tensordot(d, w, dims=([1], [0]))
            dw += torch.tensordot(d, x[:, :, i:i + HH, j:j + WW], dims=([0], [0]))
    return dx, dw


# ============================================================================
# Tensor: graph bookkeeping
# ============================================================================

class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._prev = ()
        self._backward_fn = None
        self._cache = None

    def _child(self, out, parents, backward_fn, cache):
        t = Tensor(out)
        if any(p.requires_grad for p in parents):
            t.requires_grad = True
            t._prev = parents
            t._backward_fn = backward_fn
            t._cache = cache
        return t

    def __add__(self, other):
        out, cache = add_forward(self.data, other.data)
        return self._child(out, (self, other), add_backward, cache)

    def __mul__(self, other):
        out, cache = mul_forward(self.data, other.data)
        return self._child(out, (self, other), mul_backward, cache)

    def __matmul__(self, other):
        out, cache = matmul_forward(self.data, other.data)
        return self._child(out, (self, other), matmul_backward, cache)

    def relu(self):
        out, cache = relu_forward(self.data)
        return self._child(out, (self,), relu_backward, cache)

    def sum(self):
        out, cache = sum_forward(self.data)
        return self._child(out, (self,), sum_backward, cache)

    def mean(self):
        out, cache = mean_forward(self.data)
        return self._child(out, (self,), mean_backward, cache)

    def cross_entropy(self, target):
        out, cache = softmax_loss_forward(self.data, target)
        return self._child(out, (self,), softmax_loss_backward, cache)

    def batch_norm(self, eps=1e-5):
        out, cache = batchnorm_forward(self.data, eps)
        return self._child(out, (self,), batchnorm_backward, cache)

    def avg_pool2d(self, k):
        out, cache = avg_pool_forward(self.data, k)
        return self._child(out, (self,), avg_pool_backward, cache)

    def max_pool2d(self, k):
        out, cache = max_pool_forward(self.data, k)
        return self._child(out, (self,), max_pool_backward, cache)

    def conv2d(self, w):
        out, cache = conv_forward_naive(self.data, w.data)
        return self._child(out, (self, w), conv_backward_naive, cache)

    # ------------------------------------------------------------------------
    def backward(self, grad=None):
        # topological order (parents before children), iterative so deep nets are ok
        topo, seen = [], set()
        stack = [(self, False)]
        while stack:
            node, ready = stack.pop()
            if ready:
                topo.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            stack.append((node, True))
            for p in node._prev:
                if p.requires_grad and p not in seen:
                    stack.append((p, False))

        # start every gradient buffer from zero
        for node in topo:
            node.grad = torch.zeros_like(node.data)
        self.grad = torch.ones_like(self.data) if grad is None else grad.clone()

        for node in reversed(topo):
            if node._backward_fn is None:
                continue
            dparents = node._backward_fn(node.grad, node._cache)
            for p, dp in zip(node._prev, dparents):
                if p.requires_grad:
                    p.grad += dp
