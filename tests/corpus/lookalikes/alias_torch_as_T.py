"""A correct core engine that spells torch as ``T`` and leans on ``T.no_grad()`` and ``.detach()``.

Aliases are not evidence of anything: ``T.no_grad()`` only stops torch from
recording the raw forward values, which never needed recording.
"""

import torch as T


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data.detach()
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._rule = None  # output gradient -> one gradient per parent

    def _result(self, compute, parents, rule):
        with T.no_grad():
            out = Tensor(compute(), any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._rule = parents, rule
        return out

    def __add__(self, other):
        return self._result(lambda: self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._result(lambda: a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(lambda: a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        mask = (self.data > 0).to(self.data.dtype)
        return self._result(lambda: self.data * mask, (self,), lambda g: (g * mask,))

    def sum(self):
        shape = self.data.shape
        return self._result(lambda: self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    def backward(self):
        order, seen, stack = [], {id(self)}, [(self, iter(self._parents))]
        while stack:
            node, parents = stack[-1]
            for p in parents:
                if id(p) not in seen and p.requires_grad:
                    seen.add(id(p))
                    stack.append((p, iter(p._parents)))
                    break
            else:
                stack.pop()
                order.append(node)
        grads = {id(self): T.ones_like(self.data)}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node._rule is None:
                node.grad = g.detach().clone() if node.grad is None else node.grad + g
                continue
            for p, pg in zip(node._parents, node._rule(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
