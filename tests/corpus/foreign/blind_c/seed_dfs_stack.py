from functools import partial

import torch


def _check_same_shape(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ: "
                         "this engine does not broadcast")


# ---- vector-Jacobian products: saved values first, upstream gradient last


def _vjp_add(g):
    return g, g


def _vjp_mul(a, b, g):
    return g * b, g * a


def _vjp_matmul(a, b, g):
    return g @ b.t(), a.t() @ g


def _vjp_relu(mask, g):
    return (g * mask,)


def _vjp_sum(shape, g):
    return (g.expand(shape).clone(),)


def _vjp_tanh(out, g):
    return (g * (1 - out ** 2),)


def _vjp_sigmoid(out, g):
    return (g * out * (1 - out),)


def _vjp_t(g):
    return (g.t(),)


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._vjp = None

    def _child(self, data, parents, vjp):
        out = Tensor(data)
        if any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._parents = parents
            out._vjp = vjp
        return out

    def __add__(self, other):
        _check_same_shape(self.data, other.data)
        return self._child(self.data + other.data, (self, other), _vjp_add)

    def __mul__(self, other):
        _check_same_shape(self.data, other.data)
        return self._child(self.data * other.data, (self, other),
                           partial(_vjp_mul, self.data, other.data))

    def __matmul__(self, other):
        return self._child(self.data @ other.data, (self, other),
                           partial(_vjp_matmul, self.data, other.data))

    def relu(self):
        mask = self.data > 0
        return self._child(torch.where(mask, self.data, 0.0), (self,), partial(_vjp_relu, mask))

    def sum(self):
        return self._child(self.data.sum(), (self,), partial(_vjp_sum, self.data.shape))

    def tanh(self):
        out = torch.tanh(self.data)
        return self._child(out, (self,), partial(_vjp_tanh, out))

    def sigmoid(self):
        out = torch.sigmoid(self.data)
        return self._child(out, (self,), partial(_vjp_sigmoid, out))

    @property
    def T(self):
        return self._child(self.data.t(), (self,), _vjp_t)

    def backward(self, grad=None):
        if grad is None:
            grad = torch.tensor(1.0, dtype=self.data.dtype)
        # iterative DFS with an explicit stack; a node is emitted once all its parents are
        order = []
        state = {}  # id -> 1 while on the stack, 2 when emitted
        stack = [self]
        while stack:
            node = stack[-1]
            if state.get(id(node)) == 2:
                stack.pop()
                continue
            state[id(node)] = 1
            fresh = [p for p in node._parents if p.requires_grad and id(p) not in state]
            if fresh:
                stack.extend(fresh)
                continue
            state[id(node)] = 2
            order.append(node)
            stack.pop()
        grads = {id(self): grad}
        for node in reversed(order):
            g = grads.pop(id(node))
            if node._vjp is None:
                node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for parent, pg in zip(node._parents, node._vjp(g)):
                if parent.requires_grad:
                    grads[id(parent)] = grads[id(parent)] + pg if id(parent) in grads else pg
