import torch


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ: "
                         "this engine does not broadcast")


class Tensor:
    """Each result keeps one closure per input edge: g_out -> g_input."""

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._edges = []

    def _result(self, data, *edges):
        out = Tensor(data)
        live = [(parent, fn) for parent, fn in edges if parent.requires_grad]
        if live:
            out.requires_grad = True
            out._edges = live
        return out

    def __add__(self, other):
        _check_same_shape(self.data, other.data)
        return self._result(self.data + other.data,
                            (self, lambda g: g),
                            (other, lambda g: g))

    def __mul__(self, other):
        _check_same_shape(self.data, other.data)
        a, b = self.data, other.data
        return self._result(a * b,
                            (self, lambda g: g * b),
                            (other, lambda g: g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._result(a @ b,
                            (self, lambda g: g @ b.T),
                            (other, lambda g: a.T @ g))

    def relu(self):
        pos = (self.data > 0).to(self.data.dtype)
        return self._result(self.data * pos, (self, lambda g: g * pos))

    def sum(self):
        shape = self.data.shape
        return self._result(self.data.sum(), (self, lambda g: g * torch.ones(shape, dtype=g.dtype)))

    def __neg__(self):
        return self._result(-self.data, (self, lambda g: -g))

    def __sub__(self, other):
        _check_same_shape(self.data, other.data)
        return self._result(self.data - other.data,
                            (self, lambda g: g),
                            (other, lambda g: g))

    def exp(self):
        e = self.data.exp()
        return self._result(e, (self, lambda g: g * e))

    def tanh(self):
        t = self.data.tanh()
        return self._result(t, (self, lambda g: g * (1 - t * t)))

    def __pow__(self, p):
        x = self.data
        return self._result(x ** p, (self, lambda g: g * p * x ** (p - 1)))

    @property
    def T(self):
        return self._result(self.data.T, (self, lambda g: g.T))

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        # post-order with an explicit stack: (node, index of the next edge to visit)
        order, visited = [], {id(self)}
        stack = [(self, 0)]
        while stack:
            node, i = stack[-1]
            if i < len(node._edges):
                stack[-1] = (node, i + 1)
                parent = node._edges[i][0]
                if id(parent) not in visited:
                    visited.add(id(parent))
                    stack.append((parent, 0))
            else:
                stack.pop()
                order.append(node)
        grads = {id(self): grad}
        for node in reversed(order):
            g = grads.pop(id(node))
            if not node._edges:
                node.grad = g.clone() if node.grad is None else node.grad + g
            for parent, fn in node._edges:
                contrib = fn(g)
                key = id(parent)
                grads[key] = grads[key] + contrib if key in grads else contrib
