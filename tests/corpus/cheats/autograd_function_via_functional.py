"""Cheats with ``autograd.Function`` reached through another torch module's attribute.

``torch.nn.functional`` imports torch, so ``F.torch.autograd.Function`` is
``torch.autograd.Function`` without the words in that order anywhere. Each op
is a Function with a hand-written backward, but torch's engine orders the
graph and accumulates the gradients.
"""

import torch.nn.functional as F

_Base = F.torch.autograd.Function


class _Mul(_Base):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * b, g * a


def _gradients(root, leaves):
    tracked = {id(leaf): leaf.data.detach().clone().requires_grad_() for leaf in leaves}
    out = _replay(root, dict(tracked))
    _Mul.apply(out, F.torch.ones_like(out)).backward()
    return [tracked[id(leaf)].grad for leaf in leaves]


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._compute = None

    def _op(self, compute, *inputs):
        out = Tensor(compute(*(t.data for t in inputs)), any(t.requires_grad for t in inputs))
        out._inputs, out._compute = inputs, compute
        return out

    def __add__(self, other):
        return self._op(lambda a, b: a + b, self, other)

    def __mul__(self, other):
        return self._op(lambda a, b: a * b, self, other)

    def __matmul__(self, other):
        return self._op(lambda a, b: a @ b, self, other)

    def relu(self):
        return self._op(lambda a: a.relu(), self)

    def sum(self):
        return self._op(lambda a: a.sum(), self)

    def backward(self):
        leaves = _leaves(self)
        for leaf, g in zip(leaves, _gradients(self, leaves)):
            g = F.torch.zeros_like(leaf.data) if g is None else g.detach()
            leaf.grad = g if leaf.grad is None else leaf.grad + g


def _leaves(root):
    found, seen, todo = [], set(), [root]
    while todo:
        t = todo.pop()
        if id(t) not in seen:
            seen.add(id(t))
            if t._compute is None and t.requires_grad:
                found.append(t)
            todo.extend(t._inputs)
    return found


def _replay(t, values):
    """The value of ``t`` recomputed from its leaves, with some leaves replaced by ``values``."""
    if id(t) not in values:
        values[id(t)] = t.data if t._compute is None else t._compute(*(_replay(p, values) for p in t._inputs))
    return values[id(t)]
