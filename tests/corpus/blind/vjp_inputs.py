"""Each result stores `inputs` and one `vjp(g) -> tuple` for all of them. Ordering by a
DFS post-order; gradients of non-leaf tensors live only in a local dict."""

import torch


def _shape_back(g, shape):
    for _ in range(g.dim() - len(shape)):
        g = g.sum(0)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axes, keepdim=True) if axes else g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.inputs = ()
        self.vjp = None

    def _apply(self, data, inputs, vjp):
        out = Tensor(data, any(i.requires_grad for i in inputs))
        if out.requires_grad:
            out.inputs, out.vjp = inputs, vjp
        return out

    def _wrap(self, x):
        return x if isinstance(x, Tensor) else Tensor(torch.tensor(x, dtype=self.data.dtype))

    def __add__(self, other):
        other = self._wrap(other)
        return self._apply(self.data + other.data, (self, other),
                           lambda g: (_shape_back(g, self.data.shape), _shape_back(g, other.data.shape)))

    def __mul__(self, other):
        other = self._wrap(other)
        return self._apply(self.data * other.data, (self, other),
                           lambda g: (_shape_back(g * other.data, self.data.shape),
                                      _shape_back(g * self.data, other.data.shape)))

    __radd__, __rmul__ = __add__, __mul__

    def __matmul__(self, other):
        return self._apply(self.data @ other.data, (self, other),
                           lambda g: (g @ other.data.T, self.data.T @ g))

    def relu(self):
        mask = (self.data > 0).to(self.data.dtype)
        return self._apply(self.data * mask, (self,), lambda g: (mask,))

    def sum(self):
        return self._apply(self.data.sum(), (self,), lambda g: (torch.ones_like(self.data) * g,))

    def maximum(self, other):
        a, b = self.data, other.data
        wa = (a > b).to(a.dtype) + (a == b).to(a.dtype) / 2
        return self._apply(torch.maximum(a, b), (self, other), lambda g: (g * wa, g * (1 - wa)))

    def backward(self, grad=None):
        post, visited, stack = [], set(), [[self, 0]]
        visited.add(id(self))
        while stack:
            frame = stack[-1]
            t, i = frame
            if i < len(t.inputs):
                frame[1] += 1
                child = t.inputs[i]
                if id(child) not in visited:
                    visited.add(id(child))
                    stack.append([child, 0])
            else:
                stack.pop()
                post.append(t)
        grads = {id(self): torch.ones_like(self.data) if grad is None else grad}
        for t in reversed(post):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.vjp is None:
                if t.requires_grad:
                    t.grad = g.clone() if t.grad is None else t.grad + g
                continue
            for i, ig in zip(t.inputs, t.vjp(g)):
                if i.requires_grad:
                    grads[id(i)] = grads[id(i)] + ig if id(i) in grads else ig
            t.inputs, t.vjp = (), None
