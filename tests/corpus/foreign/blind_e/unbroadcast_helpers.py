"""Small autograd engine. Backward pulls nodes from a max-heap keyed by creation
order, so a node always runs after every node created from it."""
import heapq
import itertools

import torch

_tick = itertools.count()


class _Mode:
    enabled = True


class no_grad:
    def __enter__(self):
        self._saved = _Mode.enabled
        _Mode.enabled = False

    def __exit__(self, *exc_info):
        _Mode.enabled = self._saved
        return False


def _unbroadcast(grad, shape):
    """Inverse of numpy broadcasting for gradients."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    ndim_extra = grad.ndim - len(shape)
    axes = list(range(ndim_extra))
    axes += [ndim_extra + i for i, n in enumerate(shape) if n == 1 and grad.shape[ndim_extra + i] != 1]
    grad = grad.sum(dim=axes, keepdim=True) if axes else grad
    return grad.reshape(shape)


def _const(x, ref):
    if isinstance(x, Tensor):
        return x
    return Tensor(torch.full((), float(x), dtype=ref.data.dtype))


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._stamp = next(_tick)
        self._prev = ()
        self._pullback = None

    def _child(self, data, prev, pullback):
        out = Tensor(data)
        if _Mode.enabled and any(p.requires_grad for p in prev):
            out.requires_grad = True
            out._prev = prev
            out._pullback = pullback
        return out

    def __add__(self, other):
        other = _const(other, self)
        a, b = self.data, other.data
        return self._child(a + b, (self, other), lambda g: (_unbroadcast(g, a.shape), _unbroadcast(g, b.shape)))

    def __radd__(self, other):
        return _const(other, self) + self

    def __sub__(self, other):
        other = _const(other, self)
        a, b = self.data, other.data
        return self._child(a - b, (self, other), lambda g: (_unbroadcast(g, a.shape), _unbroadcast(-g, b.shape)))

    def __rsub__(self, other):
        return _const(other, self) - self

    def __neg__(self):
        return self._child(-self.data, (self,), lambda g: (-g,))

    def __mul__(self, other):
        other = _const(other, self)
        a, b = self.data, other.data
        return self._child(a * b, (self, other), lambda g: (_unbroadcast(g * b, a.shape), _unbroadcast(g, b.shape) * a))

    def __rmul__(self, other):
        return _const(other, self) * self

    def __truediv__(self, other):
        other = _const(other, self)
        a, b = self.data, other.data
        return self._child(a / b, (self, other),
                           lambda g: (_unbroadcast(g / b, a.shape), _unbroadcast(-g * a / (b * b), b.shape)))

    def __rtruediv__(self, other):
        return _const(other, self) / self

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._child(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        a = self.data
        return self._child(torch.clamp(a, min=0.0), (self,), lambda g: (g * (a > 0),))

    def sum(self):
        a = self.data
        return self._child(a.sum(), (self,), lambda g: (torch.ones_like(a) * g,))

    def mean(self):
        a = self.data
        return self._child(a.mean(), (self,), lambda g: (torch.ones_like(a) * (g / a.numel()),))

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        zmax = z.max(dim=1, keepdim=True).values
        lse = zmax.squeeze(1) + torch.log(torch.exp(z - zmax).sum(dim=1))
        loss = (lse - z[torch.arange(n), target]).mean()

        def pullback(g):
            p = torch.exp(z - lse[:, None])
            p[torch.arange(n), target] -= 1.0
            return (p * g / n,)

        return self._child(loss, (self,), pullback)

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        incoming = {self: grad}
        heap = [(-self._stamp, id(self), self)]
        while heap:
            _, _, node = heapq.heappop(heap)
            g = incoming.pop(node)
            if node._pullback is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for parent, pg in zip(node._prev, node._pullback(g)):
                if not parent.requires_grad:
                    continue
                if parent in incoming:
                    incoming[parent] = incoming[parent] + pg
                else:
                    incoming[parent] = pg
                    heapq.heappush(heap, (-parent._stamp, id(parent), parent))
            node._prev, node._pullback = (), None
