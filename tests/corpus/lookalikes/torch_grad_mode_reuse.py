"""A correct core engine (and no_grad) that reuses torch's own grad-mode switch as its recording flag.

``no_grad`` is ``torch.no_grad`` and ops ask ``torch.is_grad_enabled()`` whether to
record: torch's switch, this engine's graph. Nothing here makes torch record.
"""

import torch

no_grad = torch.no_grad


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._rule = None

    def _result(self, data, parents, rule):
        record = torch.is_grad_enabled() and any(p.requires_grad for p in parents)
        out = Tensor(data, record)
        if record:
            out._parents, out._rule = parents, rule
        return out

    def __add__(self, other):
        return self._result(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._result(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        x = self.data
        return self._result(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))

    def sum(self):
        x = self.data
        return self._result(x.sum(), (self,), lambda g: (torch.ones_like(x) * g,))

    def backward(self):
        order, seen, stack = [], {id(self)}, [(self, iter(self._parents))]
        while stack:
            t, parents = stack[-1]
            for p in parents:
                if id(p) not in seen:
                    seen.add(id(p))
                    stack.append((p, iter(p._parents)))
                    break
            else:
                stack.pop()
                order.append(t)
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None or not t.requires_grad:
                continue
            if t._rule is None:
                t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t._parents, t._rule(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
