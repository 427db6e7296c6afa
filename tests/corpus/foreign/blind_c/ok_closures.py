import torch

_recording = True


class no_grad:
    def __enter__(self):
        global _recording
        self._saved = _recording
        _recording = False
        return self

    def __exit__(self, *exc):
        global _recording
        _recording = self._saved
        return False


def _reduce_to(g, shape):
    # sum away the leading dims broadcasting added, then the dims that were 1
    extra = g.dim() - len(shape)
    if extra > 0:
        g = g.sum(dim=tuple(range(extra)))
    dims = tuple(i for i, s in enumerate(shape) if s == 1 and g.shape[i] != 1)
    if dims:
        g = g.sum(dim=dims, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data if isinstance(data, torch.Tensor) else torch.tensor(data)
        self.requires_grad = requires_grad
        self.grad = None
        self._prev = ()
        self._backward = None

    def _accumulate(self, g):
        if self.requires_grad:
            self.grad = g.clone() if self.grad is None else self.grad + g

    @staticmethod
    def _node(data, parents):
        out = Tensor(data)
        if _recording and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._prev = parents
        return out

    def __add__(self, other):
        out = self._node(self.data + other.data, (self, other))
        if out.requires_grad:
            def _backward():
                self._accumulate(_reduce_to(out.grad, self.data.shape))
                other._accumulate(_reduce_to(out.grad, other.data.shape))
            out._backward = _backward
        return out

    def __mul__(self, other):
        a, b = self.data, other.data
        out = self._node(a * b, (self, other))
        if out.requires_grad:
            def _backward():
                self._accumulate(_reduce_to(out.grad * b, a.shape))
                other._accumulate(_reduce_to(out.grad * a, b.shape))
            out._backward = _backward
        return out

    def __matmul__(self, other):
        a, b = self.data, other.data
        out = self._node(a @ b, (self, other))
        if out.requires_grad:
            def _backward():
                self._accumulate(out.grad @ b.transpose(0, 1))
                other._accumulate(a.transpose(0, 1) @ out.grad)
            out._backward = _backward
        return out

    def relu(self):
        keep = self.data > 0
        out = self._node(torch.where(keep, self.data, torch.zeros_like(self.data)), (self,))
        if out.requires_grad:
            def _backward():
                self._accumulate(out.grad * keep)
            out._backward = _backward
        return out

    def sum(self):
        shape = self.data.shape
        out = self._node(self.data.sum(), (self,))
        if out.requires_grad:
            def _backward():
                self._accumulate(out.grad * torch.ones(shape, dtype=out.grad.dtype))
            out._backward = _backward
        return out

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        z = z - z.max(dim=1, keepdim=True).values
        log_probs = z - torch.logsumexp(z, dim=1, keepdim=True)
        rows = torch.arange(n)
        out = self._node(-log_probs[rows, target].sum() / n, (self,))
        if out.requires_grad:
            def _backward():
                d = torch.softmax(z, dim=1)
                d[rows, target] -= 1.0
                self._accumulate(d * out.grad / n)
            out._backward = _backward
        return out

    def backward(self, grad=None):
        if grad is None:
            assert self.data.numel() == 1, "backward() needs a grad for a non-scalar output"
            grad = torch.ones_like(self.data)
        # iterative post-order DFS: every node after all of its inputs
        topo, seen = [], set()
        stack = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                topo.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for p in node._prev:
                if id(p) not in seen:
                    stack.append((p, False))
        self.grad = grad.clone() if self.grad is None else self.grad + grad
        for node in reversed(topo):
            if node._backward is not None:
                node._backward()
        # free the graph: nothing keeps the intermediates alive any more
        for node in topo:
            node._prev = ()
            node._backward = None
