import contextlib

import torch

_no_grad_depth = 0


@contextlib.contextmanager
def no_grad():
    global _no_grad_depth
    _no_grad_depth += 1
    try:
        yield
    finally:
        _no_grad_depth -= 1


def postorder(root):
    """Yield every tensor reachable from `root` (through tensors that require
    grad) after all of its inputs. Iterative: an explicit stack of iterators."""
    visited = {id(root)}
    stack = [(root, iter(root._inputs))]
    while stack:
        node, inputs = stack[-1]
        for inp in inputs:
            if inp.requires_grad and id(inp) not in visited:
                visited.add(id(inp))
                stack.append((inp, iter(inp._inputs)))
                break
        else:
            stack.pop()
            yield node


def _undo_broadcast(g, shape):
    g = g.sum(dim=tuple(range(g.dim() - len(shape)))) if g.dim() > len(shape) else g
    for i, s in enumerate(shape):
        if s == 1 and g.shape[i] != 1:
            g = g.sum(dim=i, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._backward = None

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    def _wrap(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def _new(self, data, inputs, backward):
        out = Tensor(data)
        if _no_grad_depth == 0 and any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._inputs = inputs
            out._backward = backward
        return out

    # -------- core
    def __add__(self, other):
        other = self._wrap(other)
        sa, sb = self.data.shape, other.data.shape
        return self._new(self.data + other.data, (self, other),
                         lambda g: (_undo_broadcast(g, sa), _undo_broadcast(g, sb)))

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = self._wrap(other)
        a, b = self.data, other.data
        return self._new(a * b, (self, other),
                         lambda g: (_undo_broadcast(g * b, a.shape), _undo_broadcast(g * a, b.shape)))

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._new(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return self._new(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        x = self.data
        return self._new(x.sum(), (self,), lambda g: (torch.full_like(x, 1) * g,))

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("tensor does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad needed for a non-scalar output")
            grad = torch.ones_like(self.data)
        nodes = list(postorder(self))
        grads = {id(self): grad.to(self.data.dtype)}
        for node in reversed(nodes):
            g = grads.pop(id(node))
            node.grad = g.clone() if node.grad is None else node.grad + g
            if node._backward is not None:
                for inp, gi in zip(node._inputs, node._backward(g)):
                    if inp.requires_grad:
                        k = id(inp)
                        grads[k] = grads[k] + gi if k in grads else gi
        for node in nodes:
            node._inputs, node._backward = (), None

    # -------- extensions
    def __neg__(self):
        return self._new(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-self._wrap(other))

    def __rsub__(self, other):
        return self._wrap(other) + (-self)

    def __truediv__(self, other):
        other = self._wrap(other)
        a, b = self.data, other.data
        return self._new(a / b, (self, other),
                         lambda g: (_undo_broadcast(g / b, a.shape), _undo_broadcast(-g * a / b ** 2, b.shape)))

    def __rtruediv__(self, other):
        return self._wrap(other) / self

    def exp(self):
        y = self.data.exp()
        return self._new(y, (self,), lambda g: (g * y,))

    def log(self):
        x = self.data
        return self._new(x.log(), (self,), lambda g: (g / x,))

    def sigmoid(self):
        s = self.data.sigmoid()
        return self._new(s, (self,), lambda g: (g * s * (1 - s),))

    def mean(self):
        x = self.data
        return self._new(x.mean(), (self,), lambda g: (torch.full_like(x, 1 / x.numel()) * g,))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        s = self.data.shape
        return self._new(self.data.reshape(shape), (self,), lambda g: (g.reshape(s),))

    def max_pool2d(self, k):
        x = self.data
        n, c, h, w = x.shape
        ho, wo = h // k, w // k
        win = x[:, :, : ho * k, : wo * k].reshape(n, c, ho, k, wo, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho, wo, k * k)
        arg = win.argmax(-1)

        def backward(g):
            gw = torch.zeros(n, c, ho, wo, k * k, dtype=g.dtype)
            gw.scatter_(-1, arg.unsqueeze(-1), g.unsqueeze(-1))
            gx = torch.zeros_like(x)
            gx[:, :, : ho * k, : wo * k] = gw.reshape(n, c, ho, wo, k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, ho * k, wo * k)
            return (gx,)

        return self._new(win.amax(-1), (self,), backward)

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        logp = torch.log_softmax(z, dim=1)
        picked = logp[torch.arange(n), target]

        def backward(g):
            d = torch.softmax(z, dim=1)
            d[torch.arange(n), target] -= 1.0
            return (g * d,)

        return self._new(-picked.mean(), (self,), backward)
