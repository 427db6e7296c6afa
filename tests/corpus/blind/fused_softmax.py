"""Graph nodes are plain tuples: `tensor._node = (backward_fn, inputs)`. Written for a
classifier: matmul, bias broadcast, relu, and a fused softmax cross-entropy."""

import contextlib

import torch

_STATE = {"grad": True}


@contextlib.contextmanager
def no_grad():
    prev = _STATE["grad"]
    _STATE["grad"] = False
    try:
        yield
    finally:
        _STATE["grad"] = prev


def _debroadcast(g, shape):
    if g.shape == shape:
        return g
    if len(shape) == 0:
        return g.sum()
    return g.sum_to_size(shape)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._node = None

    def _out(self, data, inputs, fn):
        t = Tensor(data)
        if _STATE["grad"] and any(i.requires_grad for i in inputs):
            t.requires_grad = True
            t._node = (fn, inputs)
        return t

    def _lift(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        other = self._lift(other)
        return self._out(self.data + other.data, (self, other),
                         lambda g: (_debroadcast(g, self.data.shape), _debroadcast(g, other.data.shape)))

    def __mul__(self, other):
        other = self._lift(other)
        return self._out(self.data * other.data, (self, other),
                         lambda g: (_debroadcast(g * other.data, self.data.shape),
                                    _debroadcast(g * self.data, other.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, other):
        return self._out(self.data @ other.data, (self, other),
                         lambda g: (g @ other.data.T, self.data.T @ g))

    def relu(self):
        return self._out(self.data.relu(), (self,), lambda g: (g * (self.data > 0),))

    def sum(self):
        return self._out(self.data.sum(), (self,), lambda g: (g.expand(self.data.shape).clone(),))

    def cross_entropy(self, target):
        logits = self.data
        n = logits.shape[0]
        z = logits - logits.amax(dim=1, keepdim=True)
        probs = z.exp() / z.exp().sum(dim=1, keepdim=True)
        logp = z - z.exp().sum(dim=1, keepdim=True).log()
        loss = -logp.gather(1, target[:, None]).sum() / n

        def fn(g):
            onehot = torch.zeros_like(probs).scatter_(1, target[:, None], 1.0)
            return (g * (probs - onehot),)

        return self._out(loss, (self,), fn)

    def backward(self, grad=None):
        order, mark = [], set()
        todo = [self]
        while todo:
            t = todo[-1]
            if id(t) in mark:
                todo.pop()
                continue
            children = [i for i in (t._node[1] if t._node else ()) if id(i) not in mark]
            if children and not getattr(t, "_expanded", False):
                t._expanded = True
                todo.extend(children)
                continue
            todo.pop()
            mark.add(id(t))
            t._expanded = False
            order.append(t)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._node is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            fn, inputs = t._node
            for i, ig in zip(inputs, fn(g)):
                if i.requires_grad:
                    grads[id(i)] = grads[id(i)] + ig if id(i) in grads else ig
            t._node = None
