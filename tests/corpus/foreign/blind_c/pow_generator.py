import torch


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ: "
                         "this engine does not broadcast")


def walk(root):
    """Yield every node of root's graph after all of the nodes it was computed from."""
    seen = {id(root)}
    stack = [(root, iter(root._from))]
    while stack:
        node, rest = stack[-1]
        nxt = next(rest, None)
        if nxt is None:
            stack.pop()
            yield node
        elif nxt.requires_grad and id(nxt) not in seen:
            seen.add(id(nxt))
            stack.append((nxt, iter(nxt._from)))


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._from = ()
        self._chain = None  # upstream grad -> one grad per input

    def _new(self, data, inputs, chain):
        out = Tensor(data)
        if any(t.requires_grad for t in inputs):
            out.requires_grad = True
            out._from = inputs
            out._chain = chain
        return out

    def __add__(self, other):
        _check_same_shape(self.data, other.data)
        return self._new(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        _check_same_shape(self.data, other.data)
        x, y = self.data, other.data
        return self._new(x * y, (self, other), lambda g: (g * y, g * x))

    def __matmul__(self, other):
        x, y = self.data, other.data
        return self._new(x @ y, (self, other), lambda g: (g @ y.T, x.T @ g))

    def relu(self):
        x = self.data
        return self._new(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        shape = self.data.shape
        return self._new(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return self._new(self.data.mean(), (self,), lambda g: (g.expand(shape) / n,))

    def __pow__(self, p):
        x = self.data
        y = x ** p
        return self._new(y, (self,), lambda g: (g * p * y / x,))

    def exp(self):
        y = self.data.exp()
        return self._new(y, (self,), lambda g: (g * y,))

    def log(self):
        x = self.data
        return self._new(x.log(), (self,), lambda g: (g / x,))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        old = self.data.shape
        return self._new(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        pending = {id(self): grad}
        for node in reversed(list(walk(self))):
            g = pending.pop(id(node))
            if node._chain is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for src, gs in zip(node._from, node._chain(g)):
                if src.requires_grad:
                    pending[id(src)] = pending[id(src)] + gs if id(src) in pending else gs
