"""Graph programs: a small computation written as data.

A program is what the grader asks a candidate's engine to run: leaves with
their values, a list of steps (an op from the op table applied to earlier
names or numbers), the output, an optional upstream gradient and how many
forward/backward passes to make. Spec cases, random graphs and targeted
checks all compile to programs; the worker runs them on the candidate's class
and the oracle runs them on torch. Programs cross the process boundary as
plain JSON-able dicts (``to_wire``/``from_wire``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.lazy_modules import lazy_module
from harness.ops import OPS, OpSpec, checked_apply, needs_broadcasting, op

torch = lazy_module("torch", globals())

__all__ = ["Leaf", "Step", "Program", "ProgramError", "encode_tensor", "decode_tensor", "weighted", "DTYPES"]


class _Dtypes(Mapping):
    """The dtypes a program's tensors may have, by name; torch's dtype objects are looked up when read."""

    _NAMES = ("float64", "float32", "int64")

    def __getitem__(self, name: str) -> Any:
        if name not in self._NAMES:
            raise KeyError(name)
        return getattr(torch, name)

    def __contains__(self, name: object) -> bool:
        return name in self._NAMES

    def __iter__(self) -> Iterator[str]:
        return iter(self._NAMES)

    def __len__(self) -> int:
        return len(self._NAMES)


DTYPES = _Dtypes()


class ProgramError(ValueError):
    """A program that is not a valid graph (unknown name, invalid operands, ...)."""


def encode_tensor(t: torch.Tensor) -> dict[str, Any]:
    dtype = str(t.dtype).removeprefix("torch.")
    flat = t.detach().reshape(-1)
    values = flat.tolist() if dtype in DTYPES else flat.to(torch.float64).tolist()
    return {"shape": list(t.shape), "dtype": dtype, "values": values}


def decode_tensor(wire: dict[str, Any], dtype: str | None = None) -> torch.Tensor:
    name = dtype or wire.get("dtype", "float64")
    torch_dtype = DTYPES.get(name, torch.float64)
    return torch.tensor(wire["values"], dtype=torch_dtype).reshape(wire["shape"])


@dataclass(frozen=True)
class Leaf:
    name: str
    value: torch.Tensor
    requires_grad: bool = True
    recipe: str | None = field(default=None, compare=False)
    """Python that rebuilds ``value`` exactly (``torch.randn(..., generator=...)``), for snippets of large inputs."""

    @property
    def raw(self) -> bool:
        """Integer leaves (class targets, embedding ids) are passed as plain torch tensors."""
        return not self.value.is_floating_point()


@dataclass(frozen=True)
class Step:
    name: str
    op: str
    args: tuple[str | float | int, ...]
    """Names of earlier leaves/steps, or Python numbers."""
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def spec(self) -> OpSpec:
        return op(self.op)

    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)


@dataclass(frozen=True)
class Program:
    leaves: tuple[Leaf, ...]
    steps: tuple[Step, ...]
    output: str
    upstream: torch.Tensor | None = None
    passes: int = 1
    upstream_recipe: str | None = field(default=None, compare=False)
    """Python that rebuilds ``upstream`` exactly, for snippets of a large upstream gradient."""
    described: tuple[tuple[str, Any], ...] | None = field(default=None, compare=False)
    """The shape and size its steps were built from (``graph_shapes``), when they were: the worker is sent
    the description, a few bytes, and builds the same steps itself."""

    # ---- structure ----

    def leaf(self, name: str) -> Leaf:
        return next(leaf for leaf in self.leaves if leaf.name == name)

    def tracked(self) -> set[str]:
        """The values autograd tracks: leaves that require grad, and every step that uses one."""
        tracked = {leaf.name for leaf in self.leaves if leaf.requires_grad and not leaf.raw}
        for step in self.steps:
            if not tracked.isdisjoint(step.args):  # numbers among the args never equal a name
                tracked.add(step.name)
        return tracked

    def output_requires_grad(self) -> bool:
        """Whether any leaf that requires grad reaches the output: only then is backward called."""
        return self.output in self.tracked()

    def live(self) -> Program:
        """The same program without steps that do not lead to the output (they cannot change a gradient)."""
        needed = {self.output}
        for step in reversed(self.steps):
            if step.name in needed:
                needed.update(a for a in step.args if isinstance(a, str))
        steps = tuple(s for s in self.steps if s.name in needed)
        if len(steps) == len(self.steps):
            return self
        return Program(self.leaves, steps, self.output, self.upstream, self.passes, self.upstream_recipe)

    def fingerprint(self) -> bytes:
        """A digest of everything that decides what an engine computes for this program (names, ops, values,
        dtypes, upstream, passes): two programs with one fingerprint replay alike."""
        cached = self.__dict__.get("_fingerprint")
        if cached is None:
            digest = hashlib.blake2b(digest_size=20)
            for leaf in self.leaves:
                digest.update(repr((leaf.name, str(leaf.value.dtype), tuple(leaf.value.shape), leaf.requires_grad))
                              .encode())
                digest.update(leaf.value.detach().contiguous().cpu().numpy().tobytes())
            digest.update(repr((self.steps, self.output, self.passes)).encode())
            if self.upstream is not None:
                digest.update(repr((str(self.upstream.dtype), tuple(self.upstream.shape))).encode())
                digest.update(self.upstream.detach().contiguous().cpu().numpy().tobytes())
            cached = digest.digest()
            object.__setattr__(self, "_fingerprint", cached)  # a cache beside the fields, as validate() keeps
        return cached

    def size(self) -> int:
        """Elements in its leaves and upstream, and its steps: how much a replay of it keeps."""
        return (sum(leaf.value.numel() for leaf in self.leaves) + len(self.steps)
                + (0 if self.upstream is None else self.upstream.numel()))

    def ops_used(self) -> set[str]:
        return {step.op for step in self.steps}

    def validate(self) -> None:
        """Raise ProgramError unless every name is defined before use and every op's operands are valid."""
        # A frozen program validates the same way every time; the checked values are
        # kept so requirements() need not run the ops again.
        if "_checked_values" in self.__dict__:
            return
        seen: dict[str, torch.Tensor] = {}
        for leaf in self.leaves:
            if leaf.name in seen:
                raise ProgramError(f"name {leaf.name!r} is defined twice")
            if leaf.raw and leaf.requires_grad:
                raise ProgramError(f"integer input {leaf.name!r} cannot require grad")
            seen[leaf.name] = leaf.value.to(torch.float64) if leaf.value.is_floating_point() else leaf.value
        for step in self.steps:
            if step.name in seen:
                raise ProgramError(f"name {step.name!r} is defined twice")
            if step.op not in OPS:
                raise ProgramError(f"unknown op {step.op!r}")
            operands = []
            for arg in step.args:
                if isinstance(arg, str):
                    if arg not in seen:
                        raise ProgramError(f"{step.name}: {arg!r} is used before it is defined")
                    operands.append(seen[arg])
                else:
                    operands.append(arg)
            message, value = checked_apply(step.spec, operands, step.param_dict())
            if message is not None:
                raise ProgramError(f"{step.name} = {step.spec.render([str(a) for a in step.args], step.param_dict())}: {message}")
            seen[step.name] = value
        if self.output not in seen:
            raise ProgramError(f"output {self.output!r} is not defined")
        out = seen[self.output]
        if not out.is_floating_point():
            raise ProgramError("the output must be a floating-point tensor")
        if self.upstream is None and out.numel() != 1:
            raise ProgramError(f"the output has shape {tuple(out.shape)}: a non-scalar output needs an upstream gradient")
        if self.upstream is not None and tuple(self.upstream.shape) != tuple(out.shape):
            raise ProgramError(
                f"upstream gradient has shape {tuple(self.upstream.shape)}, the output {tuple(out.shape)}"
            )
        if self.passes not in (1, 2):
            raise ProgramError("passes must be 1 or 2")
        object.__setattr__(self, "_checked_values", seen)

    def requirements(self) -> set[str]:
        """Contract members and follow-up features a candidate needs to run this program.

        Members are attribute names (``__add__``, ``relu``); features are
        ``feature:<name>`` strings (broadcasting, upstream, passes, numbers).
        """
        if "_requirements" not in self.__dict__:
            object.__setattr__(self, "_requirements", frozenset(self._requirements_uncached()))
        return set(self.__dict__["_requirements"])

    def _requirements_uncached(self) -> set[str]:
        needs: set[str] = {"backward"}
        checked: dict[str, torch.Tensor] | None = self.__dict__.get("_checked_values")
        values: dict[str, torch.Tensor] = {leaf.name: leaf.value.to(torch.float64) if not leaf.raw else leaf.value
                                           for leaf in self.leaves}
        for step in self.steps:
            spec = step.spec
            needs.add(spec.member)
            operands = [values[a] if isinstance(a, str) else a for a in step.args]
            if any(not isinstance(a, str) for a in step.args):
                needs.add(f"feature:numbers:{step.op}")
                if not isinstance(step.args[0], str):
                    needs.add({"add": "__radd__", "mul": "__rmul__", "sub": "__rsub__", "div": "__rtruediv__"}[step.op])
            if needs_broadcasting(spec, operands):
                needs.add("feature:broadcasting")
            if checked is not None:
                values[step.name] = checked[step.name]
            else:
                values[step.name] = spec.apply_torch(operands, step.param_dict())
        if self.upstream is not None:
            needs.add("feature:upstream")
        if self.passes > 1:
            needs.add("feature:passes")
        return needs

    def level(self) -> str:
        """The highest level among the ops and features this program needs."""
        from harness.ops import LEVELS

        rank = max((LEVELS.index(op(s.op).level) for s in self.steps), default=0)
        features = {r for r in self.requirements() if r.startswith("feature:")}
        if features & {"feature:broadcasting", "feature:upstream", "feature:passes"}:
            rank = max(rank, 1)
        if any(f.startswith("feature:numbers") for f in features):
            rank = max(rank, 2)
        return LEVELS[rank]

    # ---- the oracle ----

    def run_torch(self) -> "Outcome":
        """Run the program on torch autograd in float64: the expected observation."""
        values: dict[str, torch.Tensor] = {}
        grads: dict[str, torch.Tensor | None] = {}
        leaves = {}
        for leaf in self.leaves:
            if leaf.raw:
                leaves[leaf.name] = leaf.value
            else:
                leaves[leaf.name] = leaf.value.detach().to(torch.float64).requires_grad_(leaf.requires_grad)
        for _ in range(self.passes):
            values = dict(leaves)
            for step in self.steps:
                operands = [values[a] if isinstance(a, str) else a for a in step.args]
                values[step.name] = step.spec.apply_torch(operands, step.param_dict())
            out = values[self.output]
            if out.requires_grad:
                if self.upstream is None:
                    out.backward()
                else:
                    _backward_with(out, self.upstream.to(torch.float64))
        for leaf in self.leaves:
            t = leaves[leaf.name]
            grads[leaf.name] = None if leaf.raw or t.grad is None else t.grad.detach()
        return Outcome(
            values={s.name: values[s.name].detach() for s in self.steps},
            requires_grad={s.name: bool(values[s.name].requires_grad) for s in self.steps},
            grads=grads,
        )

    # ---- wire format and snippets ----

    def to_wire(self) -> dict[str, Any]:
        """The program as the worker reads it. Built once per program and shared (never mutate it):
        drawn programs, spec cases and the timing graphs are sent to every submission of a batch."""
        wire = self.__dict__.get("_wire")
        if wire is None:
            wire = self._build_wire()
            object.__setattr__(self, "_wire", wire)  # a cache beside the fields, not a field
        return wire

    def _build_wire(self) -> dict[str, Any]:
        return {
            "leaves": [
                {"name": leaf.name, "requires_grad": leaf.requires_grad, **encode_tensor(leaf.value)}
                for leaf in self.leaves
            ],
            **({"described": dict(self.described)} if self.described is not None else {"steps": [
                {"name": s.name, "op": s.op, "args": list(s.args),
                 "params": {k: _jsonable(v) for k, v in s.params} if s.params else {}}
                for s in self.steps
            ]}),
            "output": self.output,
            "upstream": None if self.upstream is None else encode_tensor(self.upstream),
            "passes": self.passes,
            "backward": self.output_requires_grad(),
        }

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> Program:
        leaves = tuple(Leaf(w["name"], decode_tensor(w), bool(w["requires_grad"])) for w in wire["leaves"])
        steps = tuple(
            Step(w["name"], w["op"], tuple(w["args"]), tuple((k, _from_json(v)) for k, v in w["params"].items()))
            for w in wire["steps"]
        )
        upstream = None if wire.get("upstream") is None else decode_tensor(wire["upstream"])
        return cls(leaves, steps, wire["output"], upstream, int(wire.get("passes", 1)))

    def summary(self, steps: int = 8) -> str:
        """``expression()`` for a small program; the first steps and a count for a large one."""
        if len(self.steps) <= steps:
            return self.expression()
        head = Program(self.leaves, self.steps[:3], self.steps[2].name).expression()
        return f"{head}; ... ({len(self.steps)} steps in all)"

    def expression(self) -> str:
        """The steps as one line each, for messages: ``h = x @ W; y = h.sum()``."""
        return "; ".join(
            f"{s.name} = {s.spec.render([a if isinstance(a, str) else repr(a) for a in s.args], s.param_dict())}"
            for s in self.steps
        )


def _backward_with(out: torch.Tensor, upstream: torch.Tensor) -> None:
    """``out.backward(upstream)``."""
    weighted(out, upstream).backward()


def weighted(out: torch.Tensor, upstream: torch.Tensor) -> torch.Tensor:
    """``(out * upstream).sum()``: its backward is ``out.backward(upstream)``, and ``torch.autograd.grad`` of it
    is ``torch.autograd.grad(out, ..., upstream)``.

    The gradients are bit-for-bit the same (the sum passes 1.0 back, the product
    turns it into ``1.0 * upstream``), but a given output gradient imports sympy on
    its first use in a process, which costs about a second.
    """
    if tuple(upstream.shape) != tuple(out.shape):  # the product would broadcast where backward refuses
        raise RuntimeError(
            f"Mismatch in shape: the upstream gradient has shape {tuple(upstream.shape)}, the output {tuple(out.shape)}"
        )
    return (out * upstream.detach()).sum()


@dataclass
class Outcome:
    """What running a program produced: step values, requires_grad flags and leaf grads."""

    values: dict[str, torch.Tensor]
    requires_grad: dict[str, bool]
    grads: dict[str, torch.Tensor | None]
    extra: dict[str, Any] = field(default_factory=dict)


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _from_json(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value
