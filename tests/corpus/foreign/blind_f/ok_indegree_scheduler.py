# Autograd engine -- interview solution.
#
# Every result keeps a list of edges (parent tensor, function turning the
# result's gradient into that parent's contribution).  backward() counts, for
# each reachable tensor, how many edges lead into it from its consumers, and
# then runs Kahn's algorithm: a tensor is expanded only once all of its
# consumers have delivered their contribution.

import collections
import contextlib

import torch

_state = {"record": True}


@contextlib.contextmanager
def no_grad():
    old = _state["record"]
    _state["record"] = False
    try:
        yield
    finally:
        _state["record"] = old


def _unbroadcast(grad, shape):
    # sum out leading axes that broadcasting added
    while grad.dim() > len(shape):
        grad = grad.sum(dim=0)
    # then axes that were 1 in the operand
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(dim=axis, keepdim=True)
    return grad


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data if isinstance(data, torch.Tensor) else torch.tensor(data, dtype=torch.float64)
        self.requires_grad = requires_grad
        self.grad = None
        self.edges = []          # [(parent, fn)], empty for leaves
        self.is_leaf = True

    def __repr__(self):
        return "Tensor(%s, requires_grad=%s)" % (self.data, self.requires_grad)

    # ---------------------------------------------------------------- helpers
    def _const(self, value):
        if isinstance(value, Tensor):
            return value
        return Tensor(torch.tensor(value, dtype=self.data.dtype))

    @staticmethod
    def _result(data, edges):
        out = Tensor(data)
        if _state["record"]:
            live = [(p, fn) for p, fn in edges if p.requires_grad]
            if live:
                out.requires_grad = True
                out.edges = live
                out.is_leaf = False
        return out

    # ------------------------------------------------------------------ core
    def __add__(self, other):
        other = self._const(other)
        sa, sb = self.data.shape, other.data.shape
        return Tensor._result(self.data + other.data, [
            (self, lambda g: _unbroadcast(g, sa)),
            (other, lambda g: _unbroadcast(g, sb)),
        ])

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = self._const(other)
        a, b = self.data, other.data
        return Tensor._result(a * b, [
            (self, lambda g: _unbroadcast(g * b, a.shape)),
            (other, lambda g: _unbroadcast(g * a, b.shape)),
        ])

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._result(a @ b, [
            (self, lambda g: g @ b.T),
            (other, lambda g: a.T @ g),
        ])

    def relu(self):
        keep = (self.data > 0).to(self.data.dtype)
        return Tensor._result(self.data * keep, [(self, lambda g: g * keep)])

    def sum(self):
        shape = self.data.shape
        return Tensor._result(self.data.sum(), [(self, lambda g: g.expand(shape).clone())])

    # ------------------------------------------------------------ extensions
    def __neg__(self):
        return Tensor._result(-self.data, [(self, lambda g: -g)])

    def __sub__(self, other):
        other = self._const(other)
        sa, sb = self.data.shape, other.data.shape
        return Tensor._result(self.data - other.data, [
            (self, lambda g: _unbroadcast(g, sa)),
            (other, lambda g: _unbroadcast(-g, sb)),
        ])

    def __rsub__(self, other):
        return self._const(other) - self

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return Tensor._result(self.data.mean(), [(self, lambda g: g.expand(shape) / n)])

    def exp(self):
        y = self.data.exp()
        return Tensor._result(y, [(self, lambda g: g * y)])

    def log(self):
        x = self.data
        return Tensor._result(x.log(), [(self, lambda g: g / x)])

    # -------------------------------------------------------------- backward
    def backward(self, grad=None):
        if grad is None:
            assert self.data.numel() == 1, "backward() without a gradient needs a one-element output"
            grad = torch.ones_like(self.data)
        if not self.requires_grad:
            return

        # pass 1: count incoming edges (consumers) for every reachable tensor
        indegree = collections.Counter()
        seen = {id(self)}
        todo = [self]
        while todo:
            t = todo.pop()
            for parent, _ in t.edges:
                indegree[id(parent)] += 1
                if id(parent) not in seen:
                    seen.add(id(parent))
                    todo.append(parent)

        # pass 2: Kahn
        incoming = {id(self): grad}
        ready = collections.deque([self])
        while ready:
            t = ready.popleft()
            g = incoming.pop(id(t))
            if t.is_leaf:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for parent, fn in t.edges:
                contribution = fn(g)
                key = id(parent)
                incoming[key] = contribution if key not in incoming else incoming[key] + contribution
                indegree[key] -= 1
                if indegree[key] == 0:
                    ready.append(parent)
            # this node is done: let go of its inputs and saved tensors
            t.edges = []
