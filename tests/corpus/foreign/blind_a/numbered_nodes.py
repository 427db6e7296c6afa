import contextlib

import torch

# Interview: reverse-mode autograd.
# backward() flattens the graph into a numbered list: node 0 is the output,
# every node stores the *numbers* of its parents, and gradients live in a
# plain Python list indexed by node number.

_record = True


@contextlib.contextmanager
def no_grad():
    global _record
    before, _record = _record, False
    try:
        yield
    finally:
        _record = before


def _debroadcast(g, shape):
    if g.shape == shape:
        return g
    lead = g.dim() - len(shape)
    g = g.sum(dim=tuple(range(lead))) if lead else g
    dims = [i for i, s in enumerate(shape) if s == 1 and g.shape[i] > 1]
    return g.sum(dim=dims, keepdim=True) if dims else g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.parents = ()
        self.rule = None  # g -> tuple of grads, one per parent

    def __repr__(self):
        return f"Tensor({self.data!r})"

    @staticmethod
    def _const(x, like):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=like.data.dtype))

    def _child(self, data, parents, rule):
        out = Tensor(data)
        if _record and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out.parents = parents
            out.rule = rule
        return out

    # ---- core ---------------------------------------------------------------
    def __add__(self, other):
        other = Tensor._const(other, self)
        sa, sb = self.data.shape, other.data.shape
        return self._child(self.data + other.data, (self, other),
                           lambda g: (_debroadcast(g, sa), _debroadcast(g, sb)))

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = Tensor._const(other, self)
        a, b = self.data, other.data
        return self._child(a * b, (self, other),
                           lambda g: (_debroadcast(g * b, a.shape), _debroadcast(g * a, b.shape)))

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        # TODO: come back to this after backward works
        raise NotImplementedError("matmul")

    def relu(self):
        x = self.data
        return self._child(torch.relu(x), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        shape = self.data.shape
        return self._child(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    # ---- backward -----------------------------------------------------------
    def _number(self):
        """Number every node reachable from self. The output is node 0 and a
        node's parents are always found after it, so they get higher numbers."""
        nodes, number = [], {}
        stack = [self]
        while stack:
            t = stack.pop()
            if id(t) in number:
                continue
            number[id(t)] = len(nodes)
            nodes.append(t)
            stack.extend(p for p in t.parents if p.requires_grad)
        parent_ids = [[number[id(p)] if p.requires_grad else -1 for p in t.parents] for t in nodes]
        return nodes, parent_ids

    def backward(self, grad=None):
        if not self.requires_grad:
            raise RuntimeError("tensor does not require grad")
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("backward() needs a scalar output or an explicit grad")
            grad = torch.ones_like(self.data)
        nodes, parent_ids = self._number()
        grads = [None] * len(nodes)
        grads[0] = grad.to(self.data.dtype).reshape(self.data.shape)
        for i, t in enumerate(nodes):
            g = grads[i]
            if t.rule is None:
                continue
            for j, pg in zip(parent_ids[i], t.rule(g)):
                if j < 0:
                    continue
                grads[j] = pg if grads[j] is None else grads[j] + pg
        for t, g in zip(nodes, grads):
            t.grad = g.clone() if t.grad is None else t.grad + g
            t.parents, t.rule = (), None

    # ---- extensions ---------------------------------------------------------
    def __neg__(self):
        return self._child(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-Tensor._const(other, self))

    def __rsub__(self, other):
        return Tensor._const(other, self) + (-self)

    def exp(self):
        y = self.data.exp()
        return self._child(y, (self,), lambda g: (g * y,))

    def log(self):
        x = self.data
        return self._child(x.log(), (self,), lambda g: (g / x,))

    def tanh(self):
        y = self.data.tanh()
        return self._child(y, (self,), lambda g: (g * (1 - y * y),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return self._child(self.data.mean(), (self,), lambda g: ((g / n).expand(shape).clone(),))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        old = self.data.shape
        return self._child(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))
