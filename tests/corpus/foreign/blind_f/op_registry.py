# autograd engine - registry version
#
# OPS maps an op name to (forward, vjp):
#   forward(*arrays)            -> result array
#   vjp(g, inputs, output)      -> tuple of input gradients
# Tensor methods are thin: look the op up, run forward, remember how to go back.

import torch

OPS = {
    "add":     (lambda a, b: a + b,
                lambda g, ins, out: (g, g)),
    "mul":     (lambda a, b: a * b,
                lambda g, ins, out: (g * ins[1], g * ins[0])),
    "matmul":  (lambda a, b: a @ b,
                lambda g, ins, out: (g @ ins[1].T, ins[0].T @ g)),
    "relu":    (lambda a: a.clamp(min=0),
                lambda g, ins, out: (g * (ins[0] > 0),)),
    "sum":     (lambda a: a.sum(),
                lambda g, ins, out: (g * torch.ones_like(ins[0]),)),
    "neg":     (lambda a: -a,
                lambda g, ins, out: (-g,)),
    "exp":     (torch.exp,
                lambda g, ins, out: (g * out,)),
    "log":     (torch.log,
                lambda g, ins, out: (g / ins[0],)),
    "tanh":    (torch.tanh,
                lambda g, ins, out: (g * (1 - out ** 2),)),
    "sigmoid": (torch.sigmoid,
                lambda g, ins, out: (g * out * (1 - out),)),
}


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.parents = ()
        self.backprop = None     # g -> grads of parents

    def __repr__(self):
        return "Tensor(%r, requires_grad=%r)" % (self.data, self.requires_grad)

    def apply(self, name, *others):
        fwd, vjp = OPS[name]
        parents = (self,) + others
        ins = tuple(p.data for p in parents)
        out = fwd(*ins)
        t = Tensor(out, requires_grad=any(p.requires_grad for p in parents))
        if t.requires_grad:
            t.parents = parents
            t.backprop = lambda g: vjp(g, ins, out)
        return t

    def __add__(self, other):
        return self.apply("add", other)

    def __mul__(self, other):
        return self.apply("mul", other)

    def __matmul__(self, other):
        return self.apply("matmul", other)

    def __neg__(self):
        return self.apply("neg")

    def relu(self):
        return self.apply("relu")

    def sum(self):
        return self.apply("sum")

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)

        topo = []
        visited = set()
        stack = [self]
        while stack:
            t = stack.pop()
            if t is None:
                topo.append(stack.pop())
                continue
            if id(t) in visited:
                continue
            visited.add(id(t))
            stack.append(t)
            stack.append(None)
            for p in t.parents:
                if p.requires_grad and id(p) not in visited:
                    stack.append(p)

        grads = {id(self): grad}
        for t in reversed(topo):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t.backprop is None:
                if t.requires_grad:
                    t.grad = g if t.grad is None else t.grad + g
                continue
            for p, gp in zip(t.parents, t.backprop(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + gp if id(p) in grads else gp


# elementwise math: one method per registry entry
_elementwise = []
for _name in ("exp", "log", "tanh", "sigmoid"):
    _fwd, _vjp = OPS[_name]

    def _method(self, _fwd=_fwd):
        ins = (self.data,)
        out = _fwd(*ins)
        t = Tensor(out, requires_grad=self.requires_grad)
        if t.requires_grad:
            t.parents = (self,)
            t.backprop = lambda g: _vjp(g, ins, out)
        return t

    _method.__name__ = _name
    _elementwise.append(_method)

Tensor.exp, Tensor.log, Tensor.tanh, Tensor.sigmoid = _elementwise
