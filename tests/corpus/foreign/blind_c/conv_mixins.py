"""The Tensor is assembled from mixins: the graph machinery, arithmetic,
activations, and the image ops (conv2d as im2col + matmul, max pooling)."""

import torch


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ: "
                         "this engine does not broadcast")


class GraphMixin:
    def _init_graph(self):
        self._srcs = ()
        self._back = None

    def _link(self, data, srcs, back):
        out = type(self)(data)
        if any(s.requires_grad for s in srcs):
            out.requires_grad = True
            out._srcs = srcs
            out._back = back
        return out

    def _topo(self):
        order, mark = [], {}
        stack = [self]
        while stack:
            node = stack.pop()
            state = mark.get(id(node))
            if state == "done":
                continue
            if state == "open":
                mark[id(node)] = "done"
                order.append(node)
                continue
            mark[id(node)] = "open"
            stack.append(node)
            for s in node._srcs:
                if s.requires_grad and id(s) not in mark:
                    stack.append(s)
        return order

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        grads = {id(self): grad}
        for node in reversed(self._topo()):
            g = grads.pop(id(node))
            if node._back is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for s, sg in zip(node._srcs, node._back(g)):
                if s.requires_grad:
                    grads[id(s)] = grads[id(s)] + sg if id(s) in grads else sg


class ArithmeticMixin:
    def __add__(self, other):
        _check_same_shape(self.data, other.data)
        return self._link(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        _check_same_shape(self.data, other.data)
        a, b = self.data, other.data
        return self._link(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._link(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def sum(self):
        shape = self.data.shape
        return self._link(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
            shape = tuple(shape[0])
        old = self.data.shape
        return self._link(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))


class ActivationMixin:
    def relu(self):
        mask = self.data > 0
        return self._link(self.data * mask, (self,), lambda g: (g * mask,))

    def tanh(self):
        y = torch.tanh(self.data)
        return self._link(y, (self,), lambda g: (g * (1 - y * y),))


def _im2col(x, kh, kw):
    """(N, C, H, W) -> (N, C*kh*kw, L): every kh x kw patch as a column."""
    n, c, h, w = x.shape
    ho, wo = h - kh + 1, w - kw + 1
    patches = [x[:, :, i : i + ho, j : j + wo] for i in range(kh) for j in range(kw)]
    cols = torch.stack(patches, dim=2)  # (N, C, kh*kw, ho, wo)
    return cols.reshape(n, c * kh * kw, ho * wo)


def _col2im(cols, shape, kh, kw):
    """The adjoint of _im2col: add every column entry back onto its pixel."""
    n, c, h, w = shape
    ho, wo = h - kh + 1, w - kw + 1
    cols = cols.reshape(n, c, kh * kw, ho, wo)
    x = torch.zeros(shape, dtype=cols.dtype)
    for i in range(kh):
        for j in range(kw):
            x[:, :, i : i + ho, j : j + wo] += cols[:, :, i * kw + j]
    return x


class ImageMixin:
    def conv2d(self, weight):
        x, w = self.data, weight.data
        n, c, h, wd = x.shape
        o, _, kh, kw = w.shape
        ho, wo = h - kh + 1, wd - kw + 1
        cols = _im2col(x, kh, kw)                 # (N, CKK, L)
        wm = w.reshape(o, -1)                     # (O, CKK)
        out = (wm @ cols).reshape(n, o, ho, wo)

        def back(g):
            gm = g.reshape(n, o, ho * wo)                               # (N, O, L)
            gw = (gm @ cols.transpose(1, 2)).squeeze(0).reshape(w.shape)
            gx = _col2im(wm.T @ gm, x.shape, kh, kw)
            return gx, gw

        return self._link(out, (self, weight), back)

    def max_pool2d(self, k):
        x = self.data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        win = x[:, :, : ho * k, : wo * k].reshape(n, c, ho, k, wo, k).permute(0, 1, 2, 4, 3, 5)
        win = win.reshape(n, c, ho, wo, k * k)
        vals, idx = win.max(dim=-1)

        def back(g):
            gw = torch.zeros(n, c, ho, wo, k * k, dtype=g.dtype).scatter(-1, idx.unsqueeze(-1), g.unsqueeze(-1))
            gw = gw.reshape(n, c, ho, wo, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)
            gx = torch.zeros(x.shape, dtype=g.dtype)
            gx[:, :, : ho * k, : wo * k] = gw
            return (gx,)

        return self._link(vals, (self,), back)


class Tensor(GraphMixin, ArithmeticMixin, ActivationMixin, ImageMixin):
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._init_graph()
