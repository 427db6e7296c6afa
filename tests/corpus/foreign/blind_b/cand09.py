"""
Tensor records the graph; a separate Engine owns the backward pass.

Each recorded op stores `parents` and a `rule`: given the gradient of the op's
output, the rule returns one gradient per parent. Engine.run() schedules the
nodes (reverse topological order), sums incoming gradients per node and
delivers the finished gradients to the leaves.
"""
import contextlib

import torch
import torch.nn.functional as F


class _State:
    recording = True


@contextlib.contextmanager
def no_grad():
    before = _State.recording
    _State.recording = False
    try:
        yield
    finally:
        _State.recording = before


def _shrink(g, shape):
    """Reverse of broadcasting."""
    while g.dim() > len(shape):
        g = g.sum(0)
    axes = [i for i, s in enumerate(shape) if s == 1 and g.shape[i] > 1]
    if axes:
        g = g.sum(axes, keepdim=True)
    return g


class Engine:
    def __init__(self, root):
        self.root = root

    def schedule(self):
        """Post-order of the subgraph that needs gradients (no recursion)."""
        post, marked = [], set()
        todo = [(self.root, False)]
        while todo:
            node, children_done = todo.pop()
            if children_done:
                post.append(node)
                continue
            if id(node) in marked:
                continue
            marked.add(id(node))
            todo.append((node, True))
            for parent in node.parents:
                if parent.requires_grad and id(parent) not in marked:
                    todo.append((parent, False))
        post.reverse()
        return post

    def run(self, seed):
        inbox = {id(self.root): seed}
        for node in self.schedule():
            g = inbox.pop(id(node))
            if node.rule is None:
                self.deliver(node, g)
                continue
            for parent, pg in zip(node.parents, node.rule(g)):
                if parent.requires_grad:
                    key = id(parent)
                    inbox[key] = pg if key not in inbox else inbox[key] + pg
            node.parents, node.rule = (), None

    @staticmethod
    def deliver(leaf, g):
        leaf.grad = g.clone() if leaf.grad is None else leaf.grad + g


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.parents = ()
        self.rule = None

    @staticmethod
    def _lift(x, like):
        return x if isinstance(x, Tensor) else Tensor(torch.as_tensor(x, dtype=like.data.dtype))

    @staticmethod
    def _record(data, parents, rule):
        out = Tensor(data)
        if _State.recording and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out.parents = parents
            out.rule = rule
        return out

    def backward(self, grad=None):
        seed = torch.ones_like(self.data) if grad is None else grad.to(self.data.dtype)
        Engine(self).run(seed)

    # -------------------------------------------------------------------- core
    def __add__(self, other):
        other = Tensor._lift(other, self)
        sa, sb = self.data.shape, other.data.shape
        return Tensor._record(self.data + other.data, (self, other),
                              lambda g: (_shrink(g, sa), _shrink(g, sb)))

    def __mul__(self, other):
        other = Tensor._lift(other, self)
        a, b = self.data, other.data
        return Tensor._record(a * b, (self, other),
                              lambda g: (_shrink(g * b, a.shape), _shrink(g * a, b.shape)))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return Tensor._record(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        on = (self.data > 0).to(self.data.dtype)
        return Tensor._record(self.data * on, (self,), lambda g: (g * on,))

    def sum(self):
        shape = self.data.shape
        return Tensor._record(self.data.sum(), (self,), lambda g: (g.expand(shape).clone(),))

    # ---------------------------------------------------------------- numbers
    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def __neg__(self):
        return Tensor._record(-self.data, (self,), lambda g: (-g,))

    def __sub__(self, other):
        return self + (-Tensor._lift(other, self))

    def __rsub__(self, other):
        return Tensor._lift(other, self) + (-self)

    def __truediv__(self, other):
        other = Tensor._lift(other, self)
        a, b = self.data, other.data
        return Tensor._record(a / b, (self, other),
                              lambda g: (_shrink(g / b, a.shape), _shrink(-g * a / b ** 2, b.shape)))

    def __rtruediv__(self, other):
        return Tensor._lift(other, self) / self

    def __pow__(self, p):
        x = self.data
        return Tensor._record(x ** p, (self,), lambda g: (g * p * x ** (p - 1),))

    # ------------------------------------------------------------ elementwise
    def exp(self):
        y = self.data.exp()
        return Tensor._record(y, (self,), lambda g: (g * y,))

    def log(self):
        x = self.data
        return Tensor._record(x.log(), (self,), lambda g: (g / x,))

    def tanh(self):
        y = self.data.tanh()
        return Tensor._record(y, (self,), lambda g: (g * (1 - y ** 2),))

    def sigmoid(self):
        y = torch.sigmoid(self.data)
        return Tensor._record(y, (self,), lambda g: (g * y * (1 - y),))

    def maximum(self, other):
        other = Tensor._lift(other, self)
        a, b = self.data, other.data
        wa = (a > b).to(a.dtype) + 0.5 * (a == b).to(a.dtype)
        return Tensor._record(torch.maximum(a, b), (self, other),
                              lambda g: (_shrink(g * wa, a.shape), _shrink(g * (1 - wa), b.shape)))

    # ------------------------------------------------------------------ shape
    def mean(self):
        shape, n = self.data.shape, self.data.numel()
        return Tensor._record(self.data.mean(), (self,), lambda g: (g.expand(shape) / n,))

    @property
    def T(self):
        return Tensor._record(self.data.T, (self,), lambda g: (g.T,))

    def reshape(self, shape):
        old = self.data.shape
        return Tensor._record(self.data.reshape(shape), (self,), lambda g: (g.reshape(old),))

    # -------------------------------------------------------------------- cnn
    def max_pool2d(self, k):
        x = self.data
        N, C, H, W = x.shape
        Ho, Wo = H // k, W // k
        out = F.max_pool2d(x, k)
        # positions equal to their window's max receive the window's gradient
        up = out.repeat_interleave(k, 2).repeat_interleave(k, 3)
        hit = (x[:, :, :Ho * k, :Wo * k] == up).to(x.dtype)

        def rule(g):
            gx = torch.zeros_like(x)
            gx[:, :, :Ho * k, :Wo * k] = hit * g.repeat_interleave(k, 2).repeat_interleave(k, 3)
            return (gx,)
        return Tensor._record(out, (self,), rule)

    def avg_pool2d(self, k):
        x = self.data
        Ho, Wo = x.shape[2] // k, x.shape[3] // k

        def rule(g):
            gx = torch.zeros_like(x)
            gx[:, :, :Ho * k, :Wo * k] = g.repeat_interleave(k, 2).repeat_interleave(k, 3) / (k * k)
            return (gx,)
        return Tensor._record(F.avg_pool2d(x, k), (self,), rule)

    def conv2d(self, weight):
        x, w = self.data, weight.data

        def rule(g):
            return (torch.nn.grad.conv2d_input(x.shape, w, g),
                    torch.nn.grad.conv2d_weight(x, w.shape, g))
        return Tensor._record(F.conv2d(x, w), (self, weight), rule)

    def batch_norm(self, eps=1e-5):
        x = self.data
        mu = x.mean(0, keepdim=True)
        var = x.var(0, unbiased=False, keepdim=True)
        istd = 1.0 / torch.sqrt(var + eps)
        xhat = (x - mu) * istd

        def rule(g):
            return (istd * (g - g.mean(0, keepdim=True) - xhat * (g * xhat).mean(0, keepdim=True)),)
        return Tensor._record(xhat, (self,), rule)

    def cross_entropy(self, target):
        z = self.data
        n = z.shape[0]
        logp = torch.log_softmax(z, dim=1)
        onehot = F.one_hot(target, z.shape[1]).to(z.dtype)

        def rule(g):
            return (g * (logp.exp() - onehot) / n,)
        return Tensor._record(-(logp * onehot).sum() / n, (self,), rule)
