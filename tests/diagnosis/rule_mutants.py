"""Engines with one wrong backward rule, generated from the reference engine.

``rule_mutant_source(op, slot, kind)`` is the reference engine where the gradient the op
``op`` hands its operand ``slot`` is wrong in one way (``KINDS``). Ops the reference builds
from others (``-a``, ``a - b``, ``a / b``, ``a.mean()``) get rules of their own first, so
every op of the table has a rule to break. Several mutations may be applied at once
(``rule_mutant_source(*mutations)``): one sandboxed grade then covers several of them.

The engines are trusted code: tests load them in-process (``load_rule_mutant``) as the
diagnosis loads catalogued mutants, or write them out and grade them as submissions.
"""

from __future__ import annotations

import types
from typing import Final

from harness.diagnosis.mutants import reference_source
from harness.ops import OPS, TENSOR

KINDS: Final = ("sign", "factor", "transposed", "upstream", "at_input", "at_output", "unreduced", "wrong_axis",
                "overwritten", "doubled", "dtype")
"""sign flipped; a constant factor (2.5); transposed; upstream dropped; the derivative taken at the input
instead of the output, or the reverse; a broadcast not reduced, or reduced over the wrong axis; only the last
contribution kept; double counted; the wrong dtype (float32)."""

_WALK_LOOP: Final = """\
                    for target, pg in zip(node.inputs, node.backward(g, node.saved_tensors())):
                        if pg is None or target is None:
                            continue
                        key = id(target)
                        # Out of place: the same tensor may have been handed to several inputs.
                        grads[key] = grads[key] + pg if key in grads else pg
"""

_WALK_LOOP_MUTATED: Final = """\
                    for _slot, (target, pg) in enumerate(zip(node.inputs, node.backward(g, node.saved_tensors()))):
                        if pg is None or target is None:
                            continue
                        key = id(target)
                        if (node.op, _slot, "overwritten") in _MUTATIONS or key not in grads:
                            grads[key] = pg  # BUG when mutated: replaces what the input already had
                        else:
                            grads[key] = grads[key] + pg
"""

_APPENDED: Final = '''

# ---- generated: rules of their own for the ops the reference composes, then the mutations ----

_MUTATIONS = {MUTATIONS!r}


def _broadcast(rule, a, b):
    if a.shape == b.shape:
        return rule
    shapes = (a.shape, b.shape)

    def reduced(g, s):
        return tuple(d if d is None else _unbroadcast(d, shape) for d, shape in zip(rule(g, s), shapes))

    reduced.raw, reduced.shapes = rule, shapes
    return reduced


def _neg(self):
    return self._record(-self.data, "neg", (self,), lambda g, _: (-g,))


def _sub(self, other):
    if _is_number(other):
        return self + (-other)
    if not isinstance(other, Tensor):
        return NotImplemented
    a, b = self.data, other.data
    return self._record(a - b, "sub", (self, other), _broadcast(lambda g, _: (g, -g), a, b))


def _div(self, other):
    if _is_number(other):
        return self * (1.0 / other)
    if not isinstance(other, Tensor):
        return NotImplemented
    a, b = self.data, other.data
    return self._record(a / b, "div", (self, other),
                        _broadcast(lambda g, s: (g / s[1], -g * s[0] / (s[1] * s[1])), a, b), (a, b))


def _mean(self):
    shape, n = self.data.shape, self.data.numel()
    return self._record(self.data.mean(), "mean", (self,), lambda g, _: (g.expand(shape) / n,))


Tensor.__neg__, Tensor.__sub__, Tensor.__truediv__, Tensor.mean = _neg, _sub, _div, _mean
_plain_record = Tensor._record


def _wrong(d, kind, g, s, rule, slot):
    if kind == "sign":
        return -d
    if kind == "factor":
        return d * 2.5
    if kind == "doubled":
        return d + d
    if kind == "transposed":
        return d.transpose(-1, -2) if d.dim() >= 2 else d.flip(0)
    if kind == "dtype":
        return d.to(torch.float32)
    raw = getattr(rule, "raw", None)
    if kind in ("unreduced", "wrong_axis") and raw is not None:
        full = raw(g, s)[slot]
        if kind == "unreduced":
            return full
        for axis in range(full.dim()):
            summed = full.sum(dim=axis)
            if summed.numel() == d.numel() and not torch.allclose(summed.reshape(d.shape), d):
                return summed.reshape(d.shape)
    return d


def _mutated(op, rule, out, parents, saved):
    kinds = {{(slot, kind) for o, slot, kind in _MUTATIONS if o == op}}
    x = parents[0].data
    swapped = {{
        "at_input": tuple(x if t is out else t for t in saved),
        "at_output": tuple(out if t is x else t for t in saved),
    }}

    def backward(g, s):
        ds = list(rule(g, s))
        for slot, kind in sorted(kinds):
            if slot >= len(ds) or ds[slot] is None:
                continue
            if kind == "upstream":
                ds[slot] = rule(torch.ones_like(g), s)[slot]
            elif kind in swapped:
                ds[slot] = rule(g, swapped[kind])[slot]
            elif kind != "overwritten":
                ds[slot] = _wrong(ds[slot], kind, g, s, rule, slot)
        return tuple(ds)

    return backward


def _mutating_record(data, op, parents, backward, saved=()):
    if any(o == op for o, _, _ in _MUTATIONS):
        backward = _mutated(op, backward, data, parents, tuple(saved))
    return _plain_record(data, op, parents, backward, saved)


Tensor._record = staticmethod(_mutating_record)
'''


def rule_mutant_source(*mutations: tuple[str, int, str]) -> str:
    """The reference engine with each (op, operand slot, kind) rule mutation applied."""
    source = reference_source()
    assert source.count(_WALK_LOOP) == 1, "the reference's backward walk changed: update rule_mutants.py"
    source = source.replace(_WALK_LOOP, _WALK_LOOP_MUTATED)
    names = ", ".join(f"{op}[{slot}] {kind}" for op, slot, kind in mutations)
    return f"# The reference engine with wrong rules: {names}.\n" + source + _APPENDED.format(
        MUTATIONS=frozenset(mutations))


def load_rule_mutant(*mutations: tuple[str, int, str]) -> types.ModuleType:
    module = types.ModuleType("rule_mutant")
    module.__file__ = "<rule mutant>"
    exec(compile(rule_mutant_source(*mutations), module.__file__, "exec"), module.__dict__)  # noqa: S102
    return module


def matrix() -> list[tuple[str, int, str]]:
    """Every op x every tensor operand x every kind of wrong rule."""
    return [(name, slot, kind) for name, spec in OPS.items() for slot, s in enumerate(spec.slots) if s == TENSOR
            for kind in KINDS]
