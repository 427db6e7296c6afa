"""Autograd engine where every node is tagged with an `Op` enum member and the
backward rules live in one `match` statement (see `_local_grads`)."""
from __future__ import annotations

import enum

import torch


class Op(enum.Enum):
    LEAF = enum.auto()
    ADD = enum.auto()
    MUL = enum.auto()
    MATMUL = enum.auto()
    RELU = enum.auto()
    SUM = enum.auto()
    NEG = enum.auto()
    SUB = enum.auto()
    POW = enum.auto()
    TRANSPOSE = enum.auto()


class _Mode:
    recording = True


class no_grad:
    """Context manager: ops inside it are not recorded."""

    _saved = True

    def __enter__(self):
        no_grad._saved = _Mode.recording
        _Mode.recording = False

    def __exit__(self, exc_type, exc, tb):
        _Mode.recording = no_grad._saved
        return False


def _unbroadcast(g: torch.Tensor, shape) -> torch.Tensor:
    if g.shape == shape:
        return g
    ndim = len(shape)
    g = g.sum(dim=tuple(range(g.dim() - ndim))) if g.dim() > ndim else g
    for d in range(ndim):
        if shape[d] == 1 and g.shape[d] != 1:
            g = g.sum(dim=d, keepdim=True)
    return g


class Tensor:
    def __init__(self, data, requires_grad: bool = False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self.op = Op.LEAF
        self.args: tuple = ()
        self.attr = None          # whatever the rule needs besides the args

    @staticmethod
    def _wrap(x, like: "Tensor") -> "Tensor":
        if isinstance(x, Tensor):
            return x
        return Tensor(torch.tensor(x, dtype=like.data.dtype))

    @staticmethod
    def _new(value, op: Op, args: tuple, attr=None) -> "Tensor":
        out = Tensor(value)
        if _Mode.recording and any(a.requires_grad for a in args):
            out.requires_grad = True
            out.op, out.args, out.attr = op, args, attr
        return out

    # ---------------------------------------------------------------- forward
    def __add__(self, other):
        other = Tensor._wrap(other, self)
        return Tensor._new(self.data + other.data, Op.ADD, (self, other))

    def __radd__(self, other):
        return Tensor._wrap(other, self) + self

    def __mul__(self, other):
        other = Tensor._wrap(other, self)
        return Tensor._new(self.data * other.data, Op.MUL, (self, other))

    def __rmul__(self, other):
        return Tensor._wrap(other, self) * self

    def __matmul__(self, other):
        return Tensor._new(self.data @ other.data, Op.MATMUL, (self, other))

    def relu(self):
        return Tensor._new(torch.relu(self.data), Op.RELU, (self,))

    def sum(self):
        return Tensor._new(self.data.sum(), Op.SUM, (self,))

    def __neg__(self):
        return Tensor._new(-self.data, Op.NEG, (self,))

    def __sub__(self, other):
        other = Tensor._wrap(other, self)
        return Tensor._new(self.data - other.data, Op.SUB, (self, other))

    def __rsub__(self, other):
        return Tensor._wrap(other, self) - self

    def __pow__(self, p):
        return Tensor._new(self.data ** p, Op.POW, (self,), attr=p)

    @property
    def T(self):
        return Tensor._new(self.data.T, Op.TRANSPOSE, (self,))

    # --------------------------------------------------------------- backward
    def _local_grads(self, g: torch.Tensor) -> tuple:
        match self.op:
            case Op.ADD:
                a, b = self.args
                return _unbroadcast(g, a.data.shape), _unbroadcast(g, b.data.shape)
            case Op.SUB:
                a, b = self.args
                return _unbroadcast(g, a.data.shape), _unbroadcast(-g, b.data.shape)
            case Op.MUL:
                a, b = self.args
                return (_unbroadcast(g * b.data, a.data.shape),
                        _unbroadcast(g * a.data, b.data.shape))
            case Op.MATMUL:
                a, b = self.args
                return g @ b.data.T, a.data.T @ g
            case Op.RELU:
                (a,) = self.args
                return (g * (a.data > 0),)
            case Op.SUM:
                (a,) = self.args
                return (torch.ones_like(a.data) * g,)
            case Op.NEG:
                return (-g,)
            case Op.POW:
                (a,) = self.args
                p = self.attr
                return (g * p * a.data ** (p - 1),)
            case Op.TRANSPOSE:
                return (g.T,)
            case _:
                raise RuntimeError(f"no backward rule for {self.op}")

    def backward(self, grad=None):
        if grad is None:
            grad = torch.ones_like(self.data)

        # iterative post-order DFS
        topo, seen = [], set()
        stack = [(self, iter(self.args))]
        seen.add(id(self))
        while stack:
            node, it = stack[-1]
            nxt = next((a for a in it if a.requires_grad and id(a) not in seen), None)
            if nxt is None:
                stack.pop()
                topo.append(node)
            else:
                seen.add(id(nxt))
                stack.append((nxt, iter(nxt.args)))

        grads = {id(self): grad}
        for node in reversed(topo):
            g = grads.pop(id(node), None)
            if g is None:
                continue
            if node.op is Op.LEAF:
                if node.requires_grad:
                    node.grad = g.clone() if node.grad is None else node.grad + g
                continue
            for a, ga in zip(node.args, node._local_grads(g)):
                if a.requires_grad:
                    grads[id(a)] = grads[id(a)] + ga if id(a) in grads else ga
