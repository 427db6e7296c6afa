import torch


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ: "
                         "this engine does not broadcast")

# op name -> backward rule: (saved, upstream grad) -> one gradient per input
BACKWARD = {
    "add": lambda s, g: (g, g),
    "sub": lambda s, g: (g, -g),
    "neg": lambda s, g: (-g,),
    "mul": lambda s, g: (g * s[1], g * s[0]),
    "div": lambda s, g: (g / s[1], -g * s[0] / (s[1] * s[1])),
    "rdiv": lambda s, g: (-g / (s[1] * s[1]),),
    "matmul": lambda s, g: (g @ s[1].T, s[0].T @ g),
    "relu": lambda s, g: (g * s[0],),
    "sigmoid": lambda s, g: (g * s[0] * (1.0 - s[0]),),
    "sum": lambda s, g: (torch.ones(s[0], dtype=g.dtype) * g,),
}


def _const(x, like):
    """A Python number as a constant tensor shaped like ``like``."""
    return Tensor(torch.full_like(like.data, float(x)))


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = None
        self.parents = ()
        self.saved = ()

    @staticmethod
    def record(op, data, parents, saved=()):
        out = Tensor(data)
        if any(p.requires_grad for p in parents):
            out.requires_grad = True
            out.op, out.parents, out.saved = op, parents, saved
        return out

    def _lift(self, other):
        return other if isinstance(other, Tensor) else _const(other, self)

    def __add__(self, other):
        other = self._lift(other)
        _check_same_shape(self.data, other.data)
        return Tensor.record("add", self.data + other.data, (self, other))

    def __radd__(self, other):
        return self._lift(other) + self

    def __sub__(self, other):
        other = self._lift(other)
        _check_same_shape(self.data, other.data)
        return Tensor.record("sub", self.data - other.data, (self, other))

    def __rsub__(self, other):
        return self._lift(other) - self

    def __neg__(self):
        return Tensor.record("neg", -self.data, (self,))

    def __mul__(self, other):
        other = self._lift(other)
        _check_same_shape(self.data, other.data)
        return Tensor.record("mul", self.data * other.data, (self, other), (self.data, other.data))

    def __rmul__(self, other):
        return self._lift(other) * self

    def __truediv__(self, other):
        other = self._lift(other)
        _check_same_shape(self.data, other.data)
        return Tensor.record("div", self.data / other.data, (self, other), (self.data, other.data))

    def __rtruediv__(self, other):
        return Tensor.record("rdiv", other / self.data, (self,), (other, self.data))

    def __matmul__(self, other):
        return Tensor.record("matmul", self.data @ other.data, (self, other), (self.data, other.data))

    def relu(self):
        mask = (self.data > 0).to(self.data.dtype)
        return Tensor.record("relu", self.data * mask, (self,), (mask,))

    def sigmoid(self):
        out = torch.sigmoid(self.data)
        return Tensor.record("sigmoid", out, (self,), (out,))

    def sum(self):
        return Tensor.record("sum", self.data.sum(), (self,), (self.data.shape,))

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)
        # topological order: explicit-stack DFS, a node is listed after its parents
        topo, done, stack = [], set(), [self]
        while stack:
            node = stack[-1]
            if id(node) in done:
                stack.pop()
                continue
            pending = [p for p in node.parents if p.requires_grad and id(p) not in done]
            if pending:
                stack.extend(pending)
            else:
                done.add(id(node))
                topo.append(node)
                stack.pop()
        grads = {id(self): grad}
        for node in reversed(topo):
            g = grads.pop(id(node))
            if node.op is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for parent, pg in zip(node.parents, BACKWARD[node.op](node.saved, g)):
                if parent.requires_grad:
                    k = id(parent)
                    grads[k] = grads[k] + pg if k in grads else pg
