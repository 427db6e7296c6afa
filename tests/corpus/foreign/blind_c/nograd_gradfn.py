"""A grad_node chain like torch's, run by dependency counting like torch's engine."""

from collections import deque

import torch


class _Mode:
    grad_enabled = True


class no_grad:
    def __enter__(self):
        self.prev = _Mode.grad_enabled
        _Mode.grad_enabled = False
        return self

    def __exit__(self, *args):
        _Mode.grad_enabled = self.prev


def _should_record(*inputs):
    return _Mode.grad_enabled and any(t.requires_grad for t in inputs)


def _reduce(g, shape):
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


class GradFn:
    """A node of the backward graph; ``edges[i]`` receives input i's gradient."""

    def __init__(self, inputs, *saved):
        self.edges = tuple(t._grad_node() for t in inputs)
        self.saved = saved

    def release(self):
        self.edges = ()
        self.saved = ()


class AccumulateGrad:
    def __init__(self, variable):
        self.variable = variable
        self.edges = ()

    def __call__(self, g):
        v = self.variable
        v.grad = g.clone() if v.grad is None else v.grad + g
        return ()

    def release(self):
        pass


class AddBackward(GradFn):
    def __call__(self, g):
        sa, sb = self.saved
        return _reduce(g, sa), _reduce(g, sb)


class MulBackward(GradFn):
    def __call__(self, g):
        a, b = self.saved
        return _reduce(g * b, a.shape), _reduce(g * a, b.shape)


class MmBackward(GradFn):
    def __call__(self, g):
        a, b = self.saved
        return g @ b.T, a.T @ g


class ReluBackward(GradFn):
    def __call__(self, g):
        (mask,) = self.saved
        return (g * mask,)


class SumBackward(GradFn):
    def __call__(self, g):
        (shape,) = self.saved
        return (g.expand(shape).clone(),)


class CrossEntropyBackward(GradFn):
    def __call__(self, g):
        probs, target = self.saved
        n = probs.shape[0]
        onehot = torch.zeros_like(probs)
        onehot[torch.arange(n), target] = 1.0
        return ((probs - onehot) * (g / n),)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_node = None
        self._accumulator = None

    def _grad_node(self):
        if not self.requires_grad:
            return None
        if self.grad_node is not None:
            return self.grad_node
        if self._accumulator is None:
            self._accumulator = AccumulateGrad(self)
        return self._accumulator

    @staticmethod
    def _attach(out, fn):
        out.requires_grad = True
        out.grad_node = fn
        return out

    def __add__(self, other):
        out = Tensor(self.data + other.data)
        if _should_record(self, other):
            self._attach(out, AddBackward((self, other), self.data.shape, other.data.shape))
        return out

    def __mul__(self, other):
        out = Tensor(self.data * other.data)
        if _should_record(self, other):
            self._attach(out, MulBackward((self, other), self.data, other.data))
        return out

    def __matmul__(self, other):
        out = Tensor(self.data @ other.data)
        if self.requires_grad or other.requires_grad:
            self._attach(out, MmBackward((self, other), self.data, other.data))
        return out

    def relu(self):
        mask = self.data > 0
        out = Tensor(self.data * mask)
        if _should_record(self):
            self._attach(out, ReluBackward((self,), mask))
        return out

    def sum(self):
        out = Tensor(self.data.sum())
        if _should_record(self):
            self._attach(out, SumBackward((self,), self.data.shape))
        return out

    def cross_entropy(self, target):
        z = self.data - self.data.amax(dim=1, keepdim=True)
        logp = z - z.exp().sum(dim=1, keepdim=True).log()
        n = z.shape[0]
        out = Tensor(-logp[torch.arange(n), target].mean())
        if _should_record(self):
            self._attach(out, CrossEntropyBackward((self,), logp.exp(), target))
        return out

    def backward(self, grad=None):
        if grad is None:
            if self.data.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for one-element outputs")
            grad = torch.ones_like(self.data)
        root = self._grad_node()
        if root is None:
            raise RuntimeError("element 0 of tensors does not require grad")
        # count the edges into every node
        deps = {id(root): 0}
        nodes = [root]
        todo = [root]
        while todo:
            fn = todo.pop()
            for nxt in fn.edges:
                if nxt is None:
                    continue
                if id(nxt) not in deps:
                    deps[id(nxt)] = 0
                    nodes.append(nxt)
                    todo.append(nxt)
                deps[id(nxt)] += 1
        buffers = {id(root): grad}
        queue = deque([root])
        while queue:
            fn = queue.popleft()
            g = buffers.pop(id(fn))
            for nxt, ng in zip(fn.edges, fn(g)):
                if nxt is None:
                    continue
                k = id(nxt)
                buffers[k] = buffers[k] + ng if k in buffers else ng
                deps[k] -= 1
                if deps[k] == 0:
                    queue.append(nxt)
        for fn in nodes:
            fn.release()
