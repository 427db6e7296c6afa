"""Reverse-mode AD, JAX vocabulary.

primal   = the forward value (``.data``)
ct       = cotangent flowing backwards (what torch calls grad)
ct rule  = the transpose of the op's linearization: maps the output ct to one ct per input

backward() seeds the output's ct, visits nodes in reverse topological order and sums
the cotangents that reach each node before applying its rule.
"""
from contextlib import contextmanager

import torch

_trace_state = {"active": True}


@contextmanager
def no_grad():
    saved = _trace_state["active"]
    _trace_state["active"] = False
    try:
        yield
    finally:
        _trace_state["active"] = saved


def _sum_to_shape(ct, shape):
    """Transpose of broadcasting: sum the cotangent back down to `shape`."""
    extra = ct.ndim - len(shape)
    if extra:
        ct = ct.sum(dim=tuple(range(extra)))
    for axis, size in enumerate(shape):
        if size == 1 and ct.shape[axis] != 1:
            ct = ct.sum(dim=axis)
    return ct


def _primal(x, like):
    if isinstance(x, Tensor):
        return x
    return Tensor(torch.as_tensor(x, dtype=like.data.dtype))


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._in = ()
        self._ct_rule = None

    @staticmethod
    def _trace(primal_out, primals_in, ct_rule):
        out = Tensor(primal_out)
        if _trace_state["active"] and any(p.requires_grad for p in primals_in):
            out.requires_grad = True
            out._in = primals_in
            out._ct_rule = ct_rule
        return out

    # ---- core --------------------------------------------------------------
    def __add__(self, other):
        other = _primal(other, self)
        xs, ys = self.data.shape, other.data.shape
        return Tensor._trace(self.data + other.data, (self, other),
                             lambda ct: (_sum_to_shape(ct, xs), _sum_to_shape(ct, ys)))

    def __radd__(self, other):
        return self.__add__(other)

    def __mul__(self, other):
        other = _primal(other, self)
        x, y = self.data, other.data
        return Tensor._trace(x * y, (self, other),
                             lambda ct: (_sum_to_shape(ct * y, x.shape), _sum_to_shape(ct * x, y.shape)))

    def __rmul__(self, other):
        return self.__mul__(other)

    def __matmul__(self, other):
        x, y = self.data, other.data
        return Tensor._trace(x @ y, (self, other), lambda ct: (ct @ y.mT, x.mT @ ct))

    def relu(self):
        x = self.data
        return Tensor._trace(torch.relu(x), (self,), lambda ct: (ct * (x > 0),))

    def sum(self):
        shape = self.data.shape
        return Tensor._trace(self.data.sum(), (self,), lambda ct: (ct.expand(shape),))

    # ---- extensions --------------------------------------------------------
    def __neg__(self):
        return Tensor._trace(-self.data, (self,), lambda ct: (-ct,))

    def __sub__(self, other):
        other = _primal(other, self)
        xs, ys = self.data.shape, other.data.shape
        return Tensor._trace(self.data - other.data, (self, other),
                             lambda ct: (_sum_to_shape(ct, xs), _sum_to_shape(-ct, ys)))

    def __rsub__(self, other):
        return _primal(other, self).__sub__(self)

    def __truediv__(self, other):
        other = _primal(other, self)
        x, y = self.data, other.data
        return Tensor._trace(x / y, (self, other),
                             lambda ct: (_sum_to_shape(ct / y, x.shape),
                                         _sum_to_shape(-ct * x / y ** 2, y.shape)))

    def __rtruediv__(self, other):
        return _primal(other, self).__truediv__(self)

    def exp(self):
        y = torch.exp(self.data)
        return Tensor._trace(y, (self,), lambda ct: (ct * y,))

    def log(self):
        x = self.data
        return Tensor._trace(torch.log(x), (self,), lambda ct: (ct / x,))

    def tanh(self):
        y = torch.tanh(self.data)
        return Tensor._trace(y, (self,), lambda ct: (ct * (1 - y ** 2),))

    def sigmoid(self):
        y = torch.sigmoid(self.data)
        return Tensor._trace(y, (self,), lambda ct: (ct * y * (1 - y),))

    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return Tensor._trace(self.data.mean(), (self,), lambda ct: (ct.expand(shape) / n,))

    # ---- backward ----------------------------------------------------------
    def _reverse_topo(self):
        post, visited = [], set()
        work = [(self, False)]
        while work:
            node, children_done = work.pop()
            if children_done:
                post.append(node)
            elif node not in visited:
                visited.add(node)
                work.append((node, True))
                work.extend((p, False) for p in node._in if p.requires_grad and p not in visited)
        return post[::-1]

    def backward(self, grad=None):
        seed = torch.ones_like(self.data) if grad is None else grad
        cts = {self: seed}
        for node in self._reverse_topo():
            ct = cts.pop(node)
            if node._ct_rule is None:
                node.grad = ct.clone() if node.grad is None else node.grad + ct
                continue
            for p, p_ct in zip(node._in, node._ct_rule(ct)):
                if p.requires_grad:
                    cts[p] = cts[p] + p_ct if p in cts else p_ct
