"""The saved-tensor audit: what each op's graph keeps alive between forward and backward.

A backward rule needs some values from forward: ``a * b`` both operands, ``a + b``
nothing but shapes, ``tanh`` its output. Whatever the graph keeps beyond that is
memory a training step holds for nothing. The worker measures, per small graph, the
distinct storages reachable from the output (leaves and the output's own values
excluded, a storage shared by two nodes counted once); the grader knows what each op
needs and compares, in bytes. Informational: a small weight, never a gate.

The classic consequence is checked too: a saved tensor changed in place after forward
gives a silently wrong gradient, unless the engine notices (torch's version counter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Sequence

import torch

from harness.checks.context import CandidateError, Context, Failed, describe_error
from harness.checks.registry import check
from harness.checks.targeted import CORE_MEMBERS
from harness.compare import DEFAULT_TOLERANCE, compare
from harness.program import Leaf, Program, Step, decode_tensor

__all__ = ["CASES", "NEEDS", "WHY", "Audit", "audit", "needed_nodes"]

NEEDS: Final = {
    "add": "nothing", "sub": "nothing", "neg": "nothing", "sum": "nothing", "mean": "nothing",
    "reshape": "nothing", "transpose": "nothing",
    "mul": "operands", "matmul": "operands",
    "relu": "output", "tanh": "output", "sigmoid": "output", "exp": "output",
    "log": "input",
}
"""What each audited op's backward reads: nothing (shapes only), the other operand of each operand that
needs a gradient, its output, or its input."""

WHY: Final = {
    "nothing": "its gradient needs only shapes",
    "operands": "each operand's gradient is read off the other operand",
    "output": "its derivative is written in its output (tanh' = 1 - y^2, sigmoid' = y(1 - y), exp' = y), and the "
              "next op often keeps the output anyway",
    "input": "its derivative 1/x needs the input; recovering it from the output would cost an exp",
}
RELU_NOTE: Final = "relu may keep a bool mask instead (one byte an element)"


def _t(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64)


_X = _t([[1.0, 2.0, 0.5], [1.5, 0.25, 3.0], [2.0, 1.0, 0.75], [0.5, 2.5, 1.25]])
_C = _t([[0.5, -1.0, 1.0], [-0.5, 1.0, 0.5], [1.0, -0.5, 0.25], [0.25, 0.5, -0.25]])
_W = _t([[-1.0, 0.5, 2.0], [1.0, -2.0, 0.5], [0.5, 1.5, -1.0], [2.0, -0.5, 1.0]])
_M = _t([[1.0, -1.0, 0.5, 2.0, 0.0], [0.5, 1.0, -2.0, 1.0, 1.5], [-1.0, 0.5, 1.0, -0.5, 2.0]])
_K = _t([[0.5, 0.5, -0.5, 0.0, 1.0], [1.0, 0.0, 0.5, -1.0, 0.5], [0.0, -1.0, 0.5, 0.5, -0.5]])


def _single(op: str, *, params: tuple = ()) -> Program:
    """``op`` applied to intermediates (sums of a leaf and a constant), then summed: the op's own inputs and
    output are storages of the graph, not leaves."""
    leaves = (Leaf("x", _X), Leaf("c", _C, requires_grad=False), Leaf("w", _W), Leaf("m", _M),
              Leaf("k", _K, requires_grad=False))
    prep = [Step("u", "add", ("x", "c"))]
    if op in ("add", "mul"):
        prep.append(Step("v", "add", ("w", "c")))
        args: tuple = ("u", "v")
    elif op == "matmul":
        prep.append(Step("p", "add", ("m", "k")))
        args = ("u", "p")
    else:
        args = ("u",)
    steps = [*prep, Step("y", op, args, params)]
    if op != "sum":
        steps.append(Step("out", "sum", ("y",)))
    used = {a for s in steps for a in s.args}
    return Program(tuple(leaf for leaf in leaves if leaf.name in used), tuple(steps), steps[-1].name)


def _chain() -> Program:
    """linear -> tanh -> linear -> sum: the one activation needed is tanh's output h, which both tanh and the
    second product read. The pre-activation a is needed by nothing."""
    x = _X
    w1 = _M
    w2 = _t([[1.0, -0.5], [0.5, 2.0], [-1.0, 1.0], [2.0, 0.0], [0.25, -1.5]])
    return Program((Leaf("x", x, requires_grad=False), Leaf("W1", w1), Leaf("W2", w2)), (
        Step("a", "matmul", ("x", "W1")), Step("h", "tanh", ("a",)), Step("o", "matmul", ("h", "W2")),
        Step("out", "sum", ("o",))), "out")


CASES: Final[tuple[tuple[str, Program], ...]] = (
    *((op, _single(op)) for op in ("add", "mul", "matmul", "relu", "sum", "tanh", "sigmoid", "exp", "log")),
    ("reshape", _single("reshape", params=(("shape", (3, 4)),))),
    ("transpose", _single("transpose")),
    ("linear -> tanh -> linear", _chain()),
)
"""(name, program) per audited case: each op alone, and the chain an MLP layer is made of."""


def needed_nodes(program: Program) -> list[str]:
    """The step results some backward rule of ``program`` reads (leaves are not counted: they are the caller's)."""
    flags = program.run_torch().requires_grad
    leaf_flags = {leaf.name: leaf.requires_grad for leaf in program.leaves}
    needs_grad = {**leaf_flags, **flags}
    steps = {s.name for s in program.steps}
    needed: list[str] = []
    for step in program.steps:
        kind = NEEDS[step.op]
        if kind == "output":
            wanted = [step.name]
        elif kind == "input":
            wanted = [step.args[0]]
        elif kind == "operands":
            a, b = step.args
            wanted = ([b] if needs_grad.get(a) else []) + ([a] if needs_grad.get(b) else [])
        else:
            wanted = []
        needed += [name for name in wanted if isinstance(name, str) and name in steps and name not in needed]
    return needed


@dataclass(frozen=True)
class Audit:
    """One case: what its graph kept against what its backward needs, in bytes."""

    case: str
    graph: str
    kept: tuple[tuple[str, int], ...]
    """(step name, or "" for a storage no step's result owns, bytes) per kept storage."""
    needed: tuple[tuple[str, int], ...]
    error: str = ""

    @property
    def kept_bytes(self) -> int:
        return sum(n for _, n in self.kept)

    @property
    def needed_bytes(self) -> int:
        return sum(n for _, n in self.needed)

    @property
    def excess(self) -> int:
        """Bytes kept that no rule needs: named results outside the needed set, and other storages (copies,
        masks) beyond the needed results that were not kept themselves."""
        wanted = {name for name, _ in self.needed}
        kept_names = {name for name, _ in self.kept if name}
        unneeded = sum(n for name, n in self.kept if name and name not in wanted)
        unnamed = sum(n for name, n in self.kept if not name)
        missing = sum(n for name, n in self.needed if name not in kept_names)
        return unneeded + max(0, unnamed - missing)

    @property
    def why(self) -> str:
        """What the audited op's rule reads and why ('' for a chain)."""
        kind = NEEDS.get(self.case)
        if kind is None:
            return "only tanh's output h is read (by tanh's rule and by the second product's)"
        return f"{kind}: {WHY[kind]}" + (f"; {RELU_NOTE}" if self.case == "relu" else "")

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "graph": self.graph, "why": self.why, "kept_bytes": self.kept_bytes,
                "needed_bytes": self.needed_bytes, "excess_bytes": self.excess,
                "kept": [{"node": name, "bytes": n} for name, n in self.kept],
                "needed": [{"node": name, "bytes": n} for name, n in self.needed], "error": self.error}


def _bytes_of(program: Program, name: str, kept: dict[str, int]) -> int:
    """A needed result's size: what the engine's own storage of it holds when kept (float32 engines need half),
    else its size in float64."""
    if name in kept:
        return kept[name]
    return program.run_torch().values[name].numel() * 8


def audit(cases: Sequence[tuple[str, Program]], reply: dict[str, Any]) -> list[Audit]:
    """The worker's measurements judged against each case's needs."""
    rows = []
    for (name, program), measured in zip(cases, reply.get("cases", [])):
        graph = program.expression()
        if "error" in measured:
            needed = tuple((node, _bytes_of(program, node, {})) for node in needed_nodes(program))
            rows.append(Audit(name, graph, (), needed, describe_error(measured["error"])))
            continue
        kept = tuple(sorted(((k["node"], int(k["bytes"])) for k in measured["kept"]),
                            key=lambda kv: (not kv[0], kv[0])))
        sizes = {node: n for node, n in kept if node}
        needed = tuple((node, _bytes_of(program, node, sizes)) for node in needed_nodes(program))
        rows.append(Audit(name, graph, kept, needed))
    return rows


def _naming(row: Audit) -> str:
    wanted = {name for name, _ in row.needed}
    extra = [name for name, _ in row.kept if name and name not in wanted]
    return f": {', '.join(extra)}" if extra else ""


def in_place_verdict(facts: dict[str, Any]) -> str:
    """``detected`` (backward refused), ``unaffected`` (the gradient used the values forward saw),
    ``silently wrong`` or ``wrong``."""
    if "error" in facts:
        return "detected"
    before = decode_tensor(facts["w_before"], "float64")
    grad = facts.get("grad_x")
    if not isinstance(grad, dict) or "values" not in grad:
        return "wrong"
    got = decode_tensor(grad, "float64")
    if compare(got, before, DEFAULT_TOLERANCE, "x.grad") is None:
        return "unaffected"
    after = facts.get("w_after")
    if isinstance(after, dict) and "values" in after and \
            compare(got, decode_tensor(after, "float64"), DEFAULT_TOLERANCE, "x.grad") is None:
        return "silently wrong"
    return "wrong"


IN_PLACE_TEXT: Final = {
    "detected": "backward refused (a version counter, as torch has): credited",
    "unaffected": "the gradient used the values forward saw (the engine kept its own copy)",
    "silently wrong": "the gradient used the changed values: silently wrong (torch raises here)",
    "wrong": "the gradient matches neither the values forward saw nor the changed ones",
}


@check("followups.saved_tensors", "followups", "saved_tensors", requires=CORE_MEMBERS, timeout=30.0, cost=0.3)
def saved_tensors(ctx: Context) -> None:
    """Each op's graph keeps alive only what its backward needs.

    Save what each rule reads (tanh its output, log its input, + and sum only shapes); link results to nodes,
    not to input tensors.
    """
    cases = [(name, p) for name, p in CASES if all(s.spec.member in ctx.members for s in p.steps)]
    facts = ctx.probe("saved_tensors", programs=[p.to_wire() for _, p in cases], timeout=20.0)
    if "error" in facts:
        raise CandidateError(describe_error(facts["error"]))
    rows = audit(cases, facts)
    verdict = in_place_verdict(facts.get("in_place", {}))
    table = {"rows": [r.to_dict() for r in rows], "in_place": verdict, "in_place_text": IN_PLACE_TEXT[verdict]}
    over = [r for r in rows if r.excess > 0]
    broken = [r for r in rows if r.error]
    if over:
        shown = "; ".join(f"{r.case} keeps {r.kept_bytes} B where {r.needed_bytes} B are needed "
                          f"({r.excess} B for nothing{_naming(r)})" for r in over[:3])
        more = f"; and {len(over) - 3} more" if len(over) > 3 else ""
        raise Failed(f"{len(over)} of {len(rows)} graphs keep tensors their backward never reads: {shown}{more}",
                     saved_tensors=table)
    if broken and len(broken) == len(rows):
        raise CandidateError(f"no graph could be built: {broken[0].error}", saved_tensors=table)
    # A pass carries its table too: the report shows it in every format.
    ctx.note(saved_tensors=table)
