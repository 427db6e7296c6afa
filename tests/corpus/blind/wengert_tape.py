"""A Wengert list: every operation appends one record to a global tape; backward
replays the tape from the output's record back to the start."""

import contextlib
import itertools

import torch

_TAPE = {}            # sequence number -> (output, inputs, pullback), in creation order
_counter = itertools.count()
_recording = [True]


@contextlib.contextmanager
def no_grad():
    _recording.append(False)
    try:
        yield
    finally:
        _recording.pop()


def _sum_to(g, shape):
    lead = g.dim() - len(shape)
    if lead:
        g = g.sum(dim=tuple(range(lead)))
    keep = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    return g.sum(dim=keep, keepdim=True) if keep else g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._seq = None

    @staticmethod
    def _record(data, inputs, pullback):
        req = _recording[-1] and any(t.requires_grad for t in inputs)
        out = Tensor(data, req)
        if req:
            out._seq = next(_counter)
            _TAPE[out._seq] = (out, inputs, pullback)
        return out

    @staticmethod
    def _wrap(v, like):
        return v if isinstance(v, Tensor) else Tensor(torch.tensor(v, dtype=like.data.dtype))

    def __add__(self, other):
        other = self._wrap(other, self)
        sa, sb = self.data.shape, other.data.shape
        return self._record(self.data + other.data, (self, other),
                            lambda g: (_sum_to(g, sa), _sum_to(g, sb)))

    def __radd__(self, other):
        return self + other

    def __mul__(self, other):
        other = self._wrap(other, self)
        a, b = self.data, other.data
        return self._record(a * b, (self, other),
                            lambda g: (_sum_to(g * b, a.shape), _sum_to(g * a, b.shape)))

    def __rmul__(self, other):
        return self * other

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._record(a @ b, (self, other), lambda g: (g @ b.t(), a.t() @ g))

    def relu(self):
        a = self.data
        return self._record(torch.relu(a), (self,), lambda g: (torch.where(a > 0, g, torch.zeros_like(g)),))

    def sum(self):
        a = self.data
        return self._record(a.sum(), (self,), lambda g: (torch.ones_like(a) * g,))

    def __neg__(self):
        return self._record(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        other = self._wrap(other, self)
        sa, sb = self.data.shape, other.data.shape
        return self._record(self.data - other.data, (self, other),
                            lambda g: (_sum_to(g, sa), _sum_to(-g, sb)))

    def __rsub__(self, other):
        return self._wrap(other, self) - self

    def __truediv__(self, other):
        other = self._wrap(other, self)
        a, b = self.data, other.data
        return self._record(a / b, (self, other),
                            lambda g: (_sum_to(g / b, a.shape), _sum_to(-g * a / (b * b), b.shape)))

    def __rtruediv__(self, other):
        return self._wrap(other, self) / self

    def __pow__(self, p):
        a = self.data
        return self._record(a ** p, (self,), lambda g: (g * p * a ** (p - 1),))

    def tanh(self):
        t = torch.tanh(self.data)
        return self._record(t, (self,), lambda g: (g * (1 - t ** 2),))

    def mean(self):
        a = self.data
        return self._record(a.mean(), (self,), lambda g: (torch.full_like(a, 1.0 / a.numel()) * g,))

    def backward(self, grad=None):
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        if self._seq is None:           # a leaf: nothing was recorded for it
            if self.requires_grad:
                self.grad = grads[id(self)].clone() if self.grad is None else self.grad + grads[id(self)]
            return
        replayed = []
        for seq in reversed(list(_TAPE)):
            if seq > self._seq:
                continue
            out, inputs, pullback = _TAPE[seq]
            g = grads.pop(id(out), None)
            if g is None:
                continue            # this record does not lead to our output
            replayed.append(seq)
            for t, tg in zip(inputs, pullback(g)):
                if not t.requires_grad:
                    continue
                if t._seq is None:  # leaf
                    t.grad = tg.clone() if t.grad is None else t.grad + tg
                else:
                    grads[id(t)] = grads[id(t)] + tg if id(t) in grads else tg
        for seq in replayed:        # the records are spent: let the intermediates go
            del _TAPE[seq]
