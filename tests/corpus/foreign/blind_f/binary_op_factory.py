import torch


# --- helpers -----------------------------------------------------------------

def _collapse(g, shape):
    """sum g down to `shape` (reverse of broadcasting)"""
    return g if g.shape == shape else g.sum_to_size(shape)


def _lift(x, like):
    if isinstance(x, Tensor):
        return x
    return Tensor(torch.full((), float(x), dtype=like.data.dtype))


def _node(value, parents, back):
    t = Tensor(value, requires_grad=any(p.requires_grad for p in parents))
    if t.requires_grad:
        t._parents = parents
        t._back = back
    return t


def binary(fn, da, db):
    """Build a broadcasting binary method from forward fn and the two partial rules.

    da(g, a, b) / db(g, a, b) return the (unreduced) gradient w.r.t. a / b.
    """
    def method(self, other):
        other = _lift(other, self)
        a, b = self.data, other.data
        return _node(fn(a, b), (self, other),
                     lambda g: (_collapse(da(g, a, b), a.shape), _collapse(db(g, a, b), b.shape)))
    return method


def reflected(method):
    def rmethod(self, other):
        return method(_lift(other, self), self)
    return rmethod


# --- tensor ------------------------------------------------------------------

class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._back = None

    __add__ = binary(torch.add, lambda g, a, b: g, lambda g, a, b: g)
    __sub__ = binary(torch.sub, lambda g, a, b: g, lambda g, a, b: -g)
    __mul__ = binary(torch.mul, lambda g, a, b: g * b, lambda g, a, b: g * a)
    __truediv__ = binary(torch.div, lambda g, a, b: g / b, lambda g, a, b: -g * a / (b * b))
    maximum = binary(
        torch.maximum,
        lambda g, a, b: g * ((a > b) + 0.5 * (a == b)),
        lambda g, a, b: g * ((b > a) + 0.5 * (a == b)),
    )
    __radd__ = reflected(__add__)
    __rsub__ = reflected(__sub__)
    __rmul__ = reflected(__mul__)
    __rtruediv__ = reflected(__truediv__)

    def __matmul__(self, other):
        a, b = self.data, other.data
        return _node(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return _node(torch.relu(x), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        x = self.data
        return _node(x.sum(), (self,), lambda g: (torch.ones_like(x) * g,))

    # pooling over non-overlapping k x k windows of (N, C, H, W)
    def max_pool2d(self, k):
        x = self.data
        N, C, H, W = x.shape
        Ho, Wo = H // k, W // k
        blocks = x[:, :, :Ho * k, :Wo * k].reshape(N, C, Ho, k, Wo, k).permute(0, 1, 2, 4, 3, 5)
        flat = blocks.reshape(N, C, Ho, Wo, k * k)
        best, where = flat.max(dim=-1)

        def back(g):
            gflat = torch.zeros_like(flat).scatter(-1, where.unsqueeze(-1), g.unsqueeze(-1))
            gx = torch.zeros_like(x)
            gx[:, :, :Ho * k, :Wo * k] = gflat.reshape(N, C, Ho, Wo, k, k).reshape(N, C, Ho * k, Wo * k)
            return (gx,)

        return _node(best, (self,), back)

    def avg_pool2d(self, k):
        x = self.data
        N, C, H, W = x.shape
        Ho, Wo = H // k, W // k
        blocks = x[:, :, :Ho * k, :Wo * k].reshape(N, C, Ho, k, Wo, k)
        out = blocks.mean(dim=(3, 5))

        def back(g):
            gx = torch.zeros_like(x)
            spread = (g / (k * k))[:, :, :, None, :, None].expand(N, C, Ho, k, Wo, k)
            gx[:, :, :Ho * k, :Wo * k] = spread.reshape(N, C, Ho * k, Wo * k)
            return (gx,)

        return _node(out, (self,), back)

    def backward(self):
        # reverse topological order via iterative DFS
        order, state = [], {}
        stack = [self]
        while stack:
            t = stack[-1]
            s = state.get(id(t), 0)
            if s == 0:
                state[id(t)] = 1
                stack.extend(p for p in t._parents if p.requires_grad and state.get(id(p), 0) == 0)
            else:
                stack.pop()
                if s == 1:
                    state[id(t)] = 2
                    order.append(t)

        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._back is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, gp in zip(t._parents, t._back(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + gp if id(p) in grads else gp
