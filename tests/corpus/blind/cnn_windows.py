"""A CNN-minded engine: pooling and convolution work on explicit windows
(`unfold`), backward is a reverse post-order found with an explicit stack."""

import torch


def _unbroadcast(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


def _windows(x, k):
    """(N, C, H, W) -> (N, C, H//k, W//k, k, k), non-overlapping; a view of x."""
    return x.unfold(2, k, k).unfold(3, k, k)


def _unwindow(w, shape, k):
    """Inverse of _windows for a gradient: rows/columns the windows skip get 0."""
    n, c, ho, wo = w.shape[:4]
    full = torch.zeros(shape, dtype=w.dtype)
    full[:, :, :ho * k, :wo * k] = w.permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)
    return full


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._backward = None

    def _child(self, data, parents, backward):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._backward = parents, backward
        return out

    def _t(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        other = self._t(other)
        return self._child(self.data + other.data, (self, other),
                           lambda g: (_unbroadcast(g, self.data.shape), _unbroadcast(g, other.data.shape)))

    def __mul__(self, other):
        other = self._t(other)
        return self._child(self.data * other.data, (self, other),
                           lambda g: (_unbroadcast(g * other.data, self.data.shape),
                                      _unbroadcast(g * self.data, other.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, other):
        return self._child(self.data @ other.data, (self, other),
                           lambda g: (g @ other.data.T, self.data.T @ g))

    def relu(self):
        return self._child(self.data.relu(), (self,), lambda g: (g * (self.data > 0),))

    def sum(self):
        return self._child(self.data.sum(), (self,), lambda g: (torch.ones_like(self.data) * g,))

    def reshape(self, shape):
        return self._child(self.data.reshape(shape), (self,), lambda g: (g.reshape(self.data.shape),))

    def max_pool2d(self, k):
        win = _windows(self.data, k)
        out = win.amax(dim=(-2, -1))
        mask = (win == out[..., None, None]).to(self.data.dtype)
        return self._child(out, (self,),
                           lambda g: (_unwindow(mask * g[..., None, None], self.data.shape, k),))

    def avg_pool2d(self, k):
        win = _windows(self.data, k)
        ones = torch.ones_like(win) / (k * k)
        return self._child(win.mean(dim=(-2, -1)), (self,),
                           lambda g: (_unwindow(ones * g[..., None, None], self.data.shape, k),))

    def conv2d(self, weight):
        x, w = self.data, weight.data
        o, c, kh, kw = w.shape
        patches = x.unfold(2, kh, 1).unfold(3, kw, 1)        # N, C, Ho, Wo, kh, kw
        out = torch.einsum("nchwij,ocij->nohw", patches, w)

        def back(g):
            gw = torch.einsum("nchwij,nohw->ocij", patches, g)
            # the input gradient is a full correlation of g with the flipped kernel
            gp = torch.nn.functional.pad(g, (kw - 1, kw - 1, kh - 1, kh - 1))
            gx = torch.einsum("nohwij,ocij->nchw", gp.unfold(2, kh, 1).unfold(3, kw, 1), w.flip(2, 3))
            return gx, gw

        return self._child(out, (self, weight), back)

    def backward(self, grad=None):
        order, visited, stack = [], set(), [(self, False)]
        while stack:
            node, ready = stack.pop()
            if ready:
                order.append(node)
                continue
            if id(node) in visited:
                continue
            visited.add(id(node))
            stack.append((node, True))
            stack.extend((p, False) for p in node._parents)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node._backward is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for p, pg in zip(node._parents, node._backward(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            node._parents, node._backward = (), None
