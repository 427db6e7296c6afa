"""Cheats with compiled code smuggled in as bytes: ``marshal`` turns them back into a function.

The backward pass exists only as a marshalled code object (for this Python
version): no source for it anywhere, so no reading can see the autograd call
inside. ``types.FunctionType`` binds it to this module's globals.
"""

import base64
import marshal
import types

import torch

_CODE = (
    "4wIAAAAAAAAAAAAAAAYAAAADAAAA87IAAACHA5cAZAGEAHwBRACmAAAAqwAAAAAAAAAAAIoDdAEAAAAAAAAAAAAAfAB0AwAA"
    "AAAAAAAAAACJA6YBAACrAQAAAAAAAAAApgIAAKsCAAAAAAAAAAB9AnQEAAAAAAAAAAAAAGoDAAAAAAAAAACgBAAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAfAKIA2YBZAKECHwBRACmAAAAqwAAAAAAAAAAAGQDrASmAwAAqwMAAAAAAAAAAFMAKQVOYwEAAAAAAAAA"
    "AAAAAAUAAAATAAAA86QAAACXAGkAfABdTX0BdAEAAAAAAAAAAAAAfAGmAQAAqwEAAAAAAAAAAHwBagEAAAAAAAAAAKACAAAA"
    "AAAAAAAAAAAAAAAAAAAAAACmAAAAqwAAAAAAAAAAAKADAAAAAAAAAAAAAAAAAAAAAAAAAACmAAAAqwAAAAAAAAAAAKAEAAAA"
    "AAAAAAAAAAAAAAAAAAAAAACmAAAAqwAAAAAAAAAAAJMCjE5TAKkAKQXaAmlk2gRkYXRh2gZkZXRhY2jaBWNsb25l2g5yZXF1"
    "aXJlc19ncmFkXykC2gIuMNoEbGVhZnMCAAAAICD6CDxoaWRkZW4++go8ZGljdGNvbXA+eh5fZ3JhZGllbnRzLjxsb2NhbHM+"
    "LjxkaWN0Y29tcD4CAAAAc0YAAACAANAOWNAOWNAOWMgUjXKQJIl4jHiYFJwZ1xkp0hkp0Rkr1Bkr1xkx0hkx0Rkz1Bkz1xlC"
    "0hlC0RlE1BlE0A5Y0A5Y0A5Y8wAAAABjAQAAAAAAAAAAAAAABgAAABMAAADzOgAAAJUBlwBnAHwAXRd9AYkCdAEAAAAAAAAA"
    "AAAAfAGmAQAAqwEAAAAAAAAAABkAAAAAAAAAAACRAowYUwByAwAAACkBcgQAAAApA3IJAAAAcgoAAADaB3RyYWNrZWRzAwAA"
    "ACAggHILAAAA+go8bGlzdGNvbXA+eh5fZ3JhZGllbnRzLjxsb2NhbHM+LjxsaXN0Y29tcD4EAAAAcyQAAAD4gADQJErQJErQ"
    "JEq4NKBXrVKwBKlYrFjUJTbQJErQJErQJEpyDQAAAFQpAdoMYWxsb3dfdW51c2VkKQXaB19yZXBsYXnaBGRpY3TaBXRvcmNo"
    "2ghhdXRvZ3JhZNoEZ3JhZCkE2gRyb2902gZsZWF2ZXPaA291dHIPAAAAcwQAAAAgICBAcgsAAADaCl9ncmFkaWVudHNyGgAA"
    "AAEAAABzXwAAAPiAANgOWNAOWNBRV9AOWNEOWNQOWIBH3QoRkCSdBJhXmQ2cDdEKJtQKJoBD3QsQjD7XCx7SCx6Yc9AkStAk"
    "StAkStAkSsA20CRK0SRK1CRK0Fld0Ase0Qte1Ate0ARecg0AAAA="
)
_gradients = types.FunctionType(marshal.loads(base64.b64decode(_CODE)), globals())


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._inputs = ()
        self._compute = None

    def _op(self, compute, *inputs):
        out = Tensor(compute(*(t.data for t in inputs)), any(t.requires_grad for t in inputs))
        out._inputs, out._compute = inputs, compute
        return out

    def __add__(self, other):
        return self._op(lambda a, b: a + b, self, other)

    def __mul__(self, other):
        return self._op(lambda a, b: a * b, self, other)

    def __matmul__(self, other):
        return self._op(lambda a, b: a @ b, self, other)

    def relu(self):
        return self._op(lambda a: a.relu(), self)

    def sum(self):
        return self._op(lambda a: a.sum(), self)

    def backward(self):
        leaves = _leaves(self)
        for leaf, g in zip(leaves, _gradients(self, leaves)):
            g = torch.zeros_like(leaf.data) if g is None else g.detach()
            leaf.grad = g if leaf.grad is None else leaf.grad + g


def _leaves(root):
    found, seen, todo = [], set(), [root]
    while todo:
        t = todo.pop()
        if id(t) not in seen:
            seen.add(id(t))
            if t._compute is None and t.requires_grad:
                found.append(t)
            todo.extend(t._inputs)
    return found


def _replay(t, values):
    """The value of ``t`` recomputed from its leaves, with some leaves replaced by ``values``."""
    if id(t) not in values:
        values[id(t)] = t.data if t._compute is None else t._compute(*(_replay(p, values) for p in t._inputs))
    return values[id(t)]
