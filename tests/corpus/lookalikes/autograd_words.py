"""A correct core engine whose text is full of autograd words: none of them is a use of torch's autograd.

Docstrings, comments and messages name torch.autograd.grad and
``requires_grad_()``; torch calls pass ``requires_grad=False``;
``.requires_grad_(False)`` makes sure a tensor is not tracked; ``getattr`` reads
the file's own ``grad`` attributes; ``hasattr`` merely asks.
"""

import torch

_HELP = ("This engine never calls torch.autograd.grad, never sets requires_grad=True on a torch tensor "
         "and never calls torch's .backward().")
_TORCH_HAS_AUTOGRAD = hasattr(torch, "autograd")


class Tensor:
    def __init__(self, data, requires_grad=False):
        # Detached and explicitly not tracked: torch.autograd has nothing to record here.
        self.data = data.detach().requires_grad_(False)
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._grad_fn = None

    def _result(self, data, inputs, grad_fn):
        out = Tensor(data, any(t.requires_grad for t in inputs))
        if out.requires_grad:
            out._inputs, out._grad_fn = inputs, grad_fn
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
        return self._result(x.sum(), (self,), lambda g: (torch.ones_like(x, requires_grad=False) * g,))

    def backward(self):
        if not self.requires_grad:
            raise RuntimeError("backward() on a tensor that does not require grad. " + _HELP)
        order, seen, stack = [], {id(self)}, [(self, iter(self._inputs))]
        while stack:
            t, inputs = stack[-1]
            for p in inputs:
                if id(p) not in seen:
                    seen.add(id(p))
                    stack.append((p, iter(p._inputs)))
                    break
            else:
                stack.pop()
                order.append(t)
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None or not getattr(t, "requires_grad", False):
                continue
            if t._grad_fn is None:
                previous = getattr(t, "grad", None)
                t.grad = g.clone() if previous is None else previous + g
                continue
            for p, pg in zip(t._inputs, t._grad_fn(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
