"""
Autograd engine where every recorded tensor gets an integer id from a global
counter. Because a result is always created after its operands, sorting the
ids in decreasing order gives a valid reverse topological order, so backward
does not need a DFS at all:

    1. collect every node reachable from the output into a dict {id: tensor}
    2. walk the ids from largest to smallest, pushing gradients to parents
    3. accumulate leaf gradients into .grad

Gradients in flight live in a dict keyed by the same integer ids.
"""
import contextlib
import itertools

import torch

_next_id = itertools.count()
_enabled = True


@contextlib.contextmanager
def no_grad():
    global _enabled
    saved = _enabled
    _enabled = False
    try:
        yield
    finally:
        _enabled = saved


def _reduce_to(grad, shape):
    """Sum a broadcast gradient back down to `shape`."""
    ndiff = grad.dim() - len(shape)
    for _ in range(ndiff):
        grad = grad.sum(0)
    for axis, size in enumerate(shape):
        if size == 1:
            grad = grad.sum(axis, keepdim=True)
    return grad


def _wrap(x, dtype):
    if isinstance(x, Tensor):
        return x
    return Tensor(torch.tensor(x, dtype=dtype))


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.nid = next(_next_id)
        self.parents = []      # list of (parent tensor, function grad -> grad for parent)

    # ---- helpers ---------------------------------------------------------

    def _record(self, out, *edges):
        """Attach edges (parent, local_grad_fn) to `out` if recording applies."""
        if not _enabled:
            return out
        live = [(p, fn) for p, fn in edges if p.requires_grad]
        if live:
            out.requires_grad = True
            out.parents = live
        return out

    # ---- core ------------------------------------------------------------

    def __add__(self, other):
        other = _wrap(other, self.data.dtype)
        out = Tensor(self.data + other.data)
        s1, s2 = self.data.shape, other.data.shape
        return self._record(out,
                            (self, lambda g: _reduce_to(g, s1)),
                            (other, lambda g: _reduce_to(g, s2)))

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = _wrap(other, self.data.dtype)
        a, b = self.data, other.data
        out = Tensor(a * b)
        return self._record(out,
                            (self, lambda g: _reduce_to(g * b, a.shape)),
                            (other, lambda g: _reduce_to(g * a, b.shape)))

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        a, b = self.data, other.data
        out = Tensor(a @ b)
        return self._record(out,
                            (self, lambda g: g @ b.t()),
                            (other, lambda g: a.t() @ g))

    def relu(self):
        mask = (self.data > 0).to(self.data.dtype)
        out = Tensor(self.data * mask)
        return self._record(out, (self, lambda g: g * mask))

    def sum(self):
        shape = self.data.shape
        out = Tensor(sum(self.data))
        return self._record(out, (self, lambda g: g * torch.ones(shape, dtype=g.dtype)))

    # ---- extensions ------------------------------------------------------

    def __neg__(self):
        return self._record(Tensor(-self.data), (self, lambda g: -g))

    def __sub__(self, other):
        other = _wrap(other, self.data.dtype)
        s1, s2 = self.data.shape, other.data.shape
        out = Tensor(self.data - other.data)
        return self._record(out,
                            (self, lambda g: _reduce_to(g, s1)),
                            (other, lambda g: _reduce_to(-g, s2)))

    def __rsub__(self, other):
        return _wrap(other, self.data.dtype) - self

    def exp(self):
        e = torch.exp(self.data)
        return self._record(Tensor(e), (self, lambda g: g * e))

    def log(self):
        x = self.data
        return self._record(Tensor(torch.log(x)), (self, lambda g: g / x))

    # ---- backward --------------------------------------------------------

    def backward(self, grad=None):
        # 1. collect the graph
        nodes = {self.nid: self}
        frontier = [self]
        while frontier:
            t = frontier.pop()
            for p, _ in t.parents:
                if p.nid not in nodes:
                    nodes[p.nid] = p
                    frontier.append(p)

        # 2. sweep in decreasing id order (children before parents)
        pending = {self.nid: torch.ones_like(self.data) if grad is None else grad}
        for nid in sorted(nodes, reverse=True):
            t = nodes[nid]
            g = pending.pop(nid, None)
            if g is None:
                continue
            if not t.parents:
                # 3. a leaf
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, fn in t.parents:
                contribution = fn(g)
                if p.nid in pending:
                    pending[p.nid] = pending[p.nid] + contribution
                else:
                    pending[p.nid] = contribution
            t.parents = []
