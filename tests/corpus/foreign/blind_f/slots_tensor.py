import torch

_GRAD_MODE = [True]


class no_grad:
    """with no_grad(): ...  -- nothing inside is recorded."""

    __slots__ = ("_prev",)

    def __enter__(self):
        self._prev = _GRAD_MODE[0]
        _GRAD_MODE[0] = False
        return self

    def __exit__(self, *exc):
        _GRAD_MODE[0] = self._prev
        return False


class Tensor:
    __slots__ = ("data", "grad", "requires_grad", "_src", "_back", "_mark", "__weakref__")

    def __init__(self, data, requires_grad=False):
        self.data = data
        self.grad = None
        self.requires_grad = requires_grad
        self._src = ()       # input tensors
        self._back = None    # g -> tuple of input grads
        self._mark = False   # used by the topological sort

    def __repr__(self):
        return f"Tensor({self.data}, requires_grad={self.requires_grad})"

    @staticmethod
    def _make(value, src, back):
        out = Tensor(value)
        if _GRAD_MODE[0] and any(s.requires_grad for s in src):
            out.requires_grad = True
            out._src = src
            out._back = back
        return out

    # core ops ----------------------------------------------------------------
    def __add__(self, other):
        return Tensor._make(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return Tensor._make(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._make(a @ b, (self, other), lambda g: (g @ b.transpose(0, 1), a.transpose(0, 1) @ g))

    def relu(self):
        m = self.data > 0
        return Tensor._make(self.data * m, (self,), lambda g: (g * m,))

    def sum(self):
        shp = self.data.shape
        return Tensor._make(self.data.sum(), (self,), lambda g: (g.expand(shp).contiguous(),))

    # backward ------------------------------------------------------------------
    def _toposort(self):
        order = []
        stack = [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if node._mark:
                continue
            node._mark = True
            stack.append((node, True))
            for s in node._src:
                if s.requires_grad and not s._mark:
                    stack.append((s, False))
        return order

    def backward(self, grad=None):
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad must be given for a non-scalar output")
            grad = torch.ones_like(self.data)
        order = self._toposort()
        grads = {id(self): grad}
        for node in reversed(order):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node._back is None:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for s, gs in zip(node._src, node._back(g)):
                if s.requires_grad:
                    k = id(s)
                    grads[k] = grads[k] + gs if k in grads else gs
        # release the graph so intermediates can be freed
        for node in order:
            if node._back is not None:
                node._src = ()
                node._back = None
                node._mark = False
