# Autograd as a little SSA program.
#
# Every Tensor is a value with a name (%0, %1, ...) and the instruction that
# defined it: (opcode, operand values).  Leaves are defined by "input".
# backward() collects the instructions the output depends on and walks them
# from the last definition to the first, accumulating adjoints by name.

import itertools

import torch

_fresh = itertools.count()


def _sum_like(g, shape):
    """Reduce a broadcast gradient to `shape`."""
    while g.dim() > len(shape):
        g = g.sum(0)
    keep = [i for i, s in enumerate(shape) if s == 1 and g.shape[i] > 1]
    for i in keep:
        g = g.sum(i, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad=False, _inst=("input", ())):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.name = "%" + str(next(_fresh))
        self.inst = _inst

    def __repr__(self):
        op, args = self.inst
        return "%s = %s(%s)" % (self.name, op, ", ".join(a.name for a in args))

    def _define(self, op, args, value):
        rg = any(a.requires_grad for a in args)
        return Tensor(value, requires_grad=rg, _inst=(op, args) if rg else ("input", ()))

    # instructions
    def __add__(self, other):
        return self._define("add", (self, other), self.data + other.data)

    def __mul__(self, other):
        return self._define("mul", (self, other), self.data * other.data)

    def __matmul__(self, other):
        return self._define("matmul", (self, other), self.data @ other.data)

    def relu(self):
        return self._define("relu", (self,), torch.relu(self.data))

    def sum(self):
        return self._define("sum", (self,), self.data.sum())

    # adjoint rules: output adjoint -> operand adjoints
    @staticmethod
    def _adjoints(v, g):
        op, args = v.inst
        if op == "add":
            a, b = args
            return [_sum_like(g, a.data.shape), _sum_like(g, b.data.shape)]
        if op == "mul":
            a, b = args
            return [_sum_like(g * b.data, a.data.shape), _sum_like(g * a.data, b.data.shape)]
        if op == "matmul":
            a, b = args
            return [g @ b.data.T, a.data.T @ g]
        if op == "relu":
            (a,) = args
            return [g * (a.data > 0)]
        if op == "sum":
            (a,) = args
            return [g.expand(a.data.shape).clone()]
        raise ValueError("no adjoint rule for " + op)

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)

        # the sub-program this value depends on
        program = {}
        work = [self]
        while work:
            v = work.pop()
            if v.name in program:
                continue
            program[v.name] = v
            work.extend(a for a in v.inst[1] if a.requires_grad)

        adjoint = {self.name: grad}
        for name in sorted(program, reverse=True):
            v = program[name]
            g = adjoint.pop(name, None)
            if g is None:
                continue
            op, args = v.inst
            if op == "input":
                if v.requires_grad:
                    v.grad = g.clone() if v.grad is None else v.grad + g
                continue
            for a, ga in zip(args, self._adjoints(v, g)):
                if a.requires_grad:
                    adjoint[a.name] = adjoint[a.name] + ga if a.name in adjoint else ga
