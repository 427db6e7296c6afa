"""The op table: every op of the candidate's contract, described once.

The spec parser, the random graph generator, the torch oracle, the worker that
runs candidate code and the reference tests all read this table and nothing
else.

An op is applied to *operands*: tensors (the candidate's class, or torch
tensors for the oracle), raw int64 torch tensors (class indices, embedding
ids) and Python numbers, plus keyword *params* (a pooling size, a shape).

Adding an op (tests/test_op_recipe.py fails naming the next step while one is missing):

1. One ``OpSpec`` in ``OPS`` below: its level, operand slots, the call as a user writes
   it, torch's forward, syntax, the candidate's member, its domain rule, and what random
   graphs need to draw it: a default or a drawer (``param_drawers``) for every param, its
   ``rank`` when it takes (N, C, H, W) tensors only, whether it ``keeps_integers``; its
   ``concept`` (and any it ``teaches`` besides) is one ``grade explain`` knows (harness/data/concepts.yaml).
2. The reference rule: the member on ``Tensor`` in reference/engine.py, forward and
   backward side by side (tests/test_ops.py holds it to torch autograd).
3. The template stub: a ``def MEMBER`` line in candidate_template/solution.py, the file
   ``grade init`` writes, with the other ops of its level.
4. ``python -m harness.checks.redraw``: a core or extension op joins the default random
   searches, so the shipped drawn programs change (tests/checks/test_examples.py says so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Final, Sequence

from harness.lazy_modules import lazy_module
from harness.vocabulary import LEVELS

torch = lazy_module("torch", globals())
F = lazy_module("torch.nn.functional", globals(), "F")

__all__ = ["OpSpec", "OPS", "LEVELS", "op", "ops_for_level", "check_operands", "checked_apply", "broadcast_shape",
           "OperandError"]


# Kinds of operand an op slot accepts.
TENSOR: Final = "tensor"  # the candidate's Tensor (a torch tensor for the oracle)
INDEX: Final = "index"  # a raw int64 torch tensor, never wrapped
NUMBER: Final = "number"  # a Python int or float


class OperandError(ValueError):
    """Operands outside an op's valid domain (wrong shapes, log of a negative, ...)."""


@dataclass(frozen=True)
class OpSpec:
    name: str
    level: str
    slots: tuple[str, ...]
    """Operand kinds, in call order. A TENSOR slot may also take a number for
    the ops where Python allows it (``a + 1``): see ``number_slots``."""
    call: Callable[..., Any]
    """Applies the op to the candidate's objects exactly as a user writes it."""
    torch_fn: Callable[..., torch.Tensor]
    """The same op on torch tensors: the oracle's forward."""
    syntax: str
    """How the op reads in candidate code; ``{0}``, ``{1}`` are operands,
    ``{name}`` params. Used to print snippets and to parse spec expressions."""
    member: str
    """The attribute a candidate class needs for this op (``__add__``, ``relu``)."""
    params: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)
    number_slots: tuple[int, ...] = ()
    """Slots where a Python number is accepted instead of a tensor."""
    domain: Callable[..., str | None] = lambda *operands, **params: None
    """Op-specific domain rule on torch operands: a message when invalid."""
    smooth: bool = True
    """False for ops with kinks or ties inside their domain (relu, max, pooling):
    finite differences are not used there and generators avoid the kinks."""
    transcendental: bool = False
    """Uses exp/log-like functions: float32 needs a looser tolerance."""
    broadcasts: bool = False
    """Elementwise binary op whose operands may broadcast (a follow-up)."""
    param_drawers: dict[str, Callable[[Any, int], Any]] = field(default_factory=dict)
    """How random graphs choose each param that has no default: ``drawer(first operand, pick)``
    turns a small integer into a value that suits the operand (see ``exponents`` below)."""
    rank: int | None = None
    """The rank its tensor operands must have when the op fixes one: 4 for the (N, C, H, W) ops,
    for which random graphs then draw image leaves. None: any rank its domain rule accepts."""
    keeps_integers: bool = True
    """Whole-number inputs give whole-number results with no rounding (not mean, a division, exp):
    random graphs then know a zero before relu or a tie is exact in every engine."""
    concept: str = "ops"
    teaches: tuple[str, ...] = ()
    """Concepts a graph with this op exercises besides ``concept``, the one its failures are charged to
    (``@``: the matmul gradients): ``grade spec new`` names them all for a new case."""
    doc: str = ""
    result_size: Callable[..., int] | None = None
    """How many elements the op returns, from its operands' shapes (a number's is ``()``), where that is not the
    size of its operands broadcast together (at most that of the largest, when they do not broadcast): what
    spec loading checks before it computes a step."""

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"op {self.name}: unknown level {self.level!r}; one of {', '.join(LEVELS)}")
        undrawn = [p for p in self.params if p not in self.defaults and p not in self.param_drawers]
        if undrawn:
            raise ValueError(f"op {self.name}: param {undrawn[0]!r} has neither a default nor a drawer, so random "
                             f"graphs cannot use the op: give OpSpec param_drawers={{{undrawn[0]!r}: ...}} "
                             "(step 1 of adding an op, harness/ops.py)")
        unknown = sorted(set(self.param_drawers) - set(self.params))
        if unknown:
            raise ValueError(f"op {self.name}: a drawer for {unknown[0]!r}, which is not one of its params")
        if self.transcendental and self.keeps_integers:
            raise ValueError(f"op {self.name}: a transcendental op cannot keep integers: keeps_integers=False")

    def render(self, operands: Sequence[str], params: dict[str, Any] | None = None) -> str:
        """The op as candidate code; a param with no value and no default reads as its name (``x ** p``)."""
        values = {**self.defaults, **(params or {})}
        names = {k: k for k in self.params}
        return self.syntax.format(*operands, **{**names, **{k: _literal(v) for k, v in values.items()}})

    def apply_torch(self, operands: Sequence[Any], params: dict[str, Any] | None = None) -> torch.Tensor:
        return self.torch_fn(*operands, **{**self.defaults, **(params or {})})

    def apply_candidate(self, operands: Sequence[Any], params: dict[str, Any] | None = None) -> Any:
        return self.call(*operands, **{**self.defaults, **(params or {})})

    def result_elements(self, operands: Sequence[Any]) -> int:
        """An upper bound on the elements of the op's result on ``operands``, from their shapes alone."""
        shapes = [tuple(o.shape) if hasattr(o, "shape") else () for o in operands]
        if self.result_size is not None:
            return int(self.result_size(*shapes))
        shape = broadcast_shape(*shapes)
        return math.prod(shape) if shape is not None else max(math.prod(s) for s in shapes)

    def drawn_params(self, operand: Any, pick: int) -> dict[str, Any]:
        """Its params that have no default, each from its drawer, to suit ``operand`` (the first one)."""
        return {name: self.param_drawers[name](operand, pick) for name in self.params if name not in self.defaults}


def _literal(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_literal(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)


# ---- domain rules -------------------------------------------------------------
# Each takes torch operands (numbers stay numbers) and returns None or a message.


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """The shape ``shapes`` broadcast to under torch's rule, or None when they do not broadcast.

    Use this rather than ``torch.broadcast_shapes``, which imports sympy on its first
    call in a process (about a second) and costs ~0.7 ms a call after that.
    """
    result = []
    for i in range(1, max((len(s) for s in shapes), default=0) + 1):
        sizes = {s[-i] for s in shapes if len(s) >= i} - {1}
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(reversed(result))


def _same_or_broadcast(a: Any, b: Any) -> str | None:
    sa, sb = _shape(a), _shape(b)
    if broadcast_shape(sa, sb) is None:
        return f"shapes {_fmt(sa)} and {_fmt(sb)} do not broadcast"
    return None


def _matmul_rule(a: torch.Tensor, b: torch.Tensor) -> str | None:
    if a.dim() != 2 or b.dim() != 2:
        return f"@ takes two 2-D tensors, got shapes {_fmt(a.shape)} and {_fmt(b.shape)}"
    if a.shape[1] != b.shape[0]:
        return f"@ needs (n, m) @ (m, p), got {_fmt(a.shape)} @ {_fmt(b.shape)}"
    return None


def _positive(a: torch.Tensor) -> str | None:
    return None if bool((a > 0).all()) else "log needs positive inputs"


def _nonzero_divisor(a: Any, b: Any) -> str | None:
    if (msg := _same_or_broadcast(a, b)) is not None:
        return msg
    bad = (b == 0) if isinstance(b, (int, float)) else bool((b == 0).any())
    return "division by zero" if bad else None


def _pow_rule(a: torch.Tensor, p: float) -> str | None:
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        return "the exponent of ** must be a Python number"
    if float(p) != int(p) and bool((a <= 0).any()):
        return "a non-integer power needs positive inputs"
    if p < 0 and bool((a == 0).any()):
        return "a negative power of zero"
    return None


def _no_ties(a: torch.Tensor, b: torch.Tensor) -> str | None:
    if (msg := _same_or_broadcast(a, b)) is not None:
        return msg
    # At a tie the "winner" is ambiguous; the contract only fixes the gradient elsewhere.
    return "maximum has ties, where its gradient is ambiguous" if bool((a == b).any()) else None


def _two_d(name: str) -> Callable[[torch.Tensor], str | None]:
    def rule(a: torch.Tensor) -> str | None:
        return None if a.dim() == 2 else f"{name} needs a 2-D tensor, got shape {_fmt(a.shape)}"

    return rule


def _reshape_rule(a: torch.Tensor, shape: Sequence[int]) -> str | None:
    if not isinstance(shape, (list, tuple)) or not all(isinstance(s, int) for s in shape):
        return "reshape takes a tuple of ints"
    if math.prod(shape) != a.numel() or any(s < 0 for s in shape):
        return f"cannot reshape {_fmt(a.shape)} ({a.numel()} elements) to {_fmt(shape)}"
    return None


def _pool_rule(kind: str) -> Callable[..., str | None]:
    def rule(a: torch.Tensor, k: int) -> str | None:
        if a.dim() != 4:
            return f"{kind} needs (N, C, H, W), got shape {_fmt(a.shape)}"
        if not isinstance(k, int) or k < 1 or a.shape[2] % k or a.shape[3] % k:
            return f"{kind}({k!r}) needs H and W divisible by k, got shape {_fmt(a.shape)}"
        if kind == "max_pool2d":
            windows = _windows(a, k)
            top2 = windows.topk(min(2, k * k), dim=-1).values
            if k > 1 and bool((top2[..., 0] == top2[..., 1]).any()):
                return "a max_pool2d window has a tied maximum, where the gradient is ambiguous"
        return None

    return rule


def _windows(a: torch.Tensor, k: int) -> torch.Tensor:
    n, c, h, w = a.shape
    return a.reshape(n, c, h // k, k, w // k, k).permute(0, 1, 2, 4, 3, 5).reshape(n, c, h // k, w // k, k * k)


def _conv_rule(a: torch.Tensor, w: torch.Tensor) -> str | None:
    if a.dim() != 4 or w.dim() != 4:
        return f"conv2d needs input (N, C, H, W) and weight (O, C, kh, kw), got {_fmt(a.shape)} and {_fmt(w.shape)}"
    if a.shape[1] != w.shape[1]:
        return f"conv2d channel mismatch: input has {a.shape[1]}, weight expects {w.shape[1]}"
    if w.shape[2] > a.shape[2] or w.shape[3] > a.shape[3]:
        return f"conv2d kernel {_fmt(w.shape[2:])} is larger than the input {_fmt(a.shape[2:])}"
    return None


def _index_rule(w: torch.Tensor, ids: torch.Tensor) -> str | None:
    if w.dim() != 2:
        return f"an embedding table must be 2-D, got shape {_fmt(w.shape)}"
    if ids.dtype != torch.int64:
        return f"indices must be int64, got {str(ids.dtype).removeprefix('torch.')}"
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= w.shape[0]):
        return f"indices must lie in [0, {w.shape[0]})"
    return None


def _batch_norm_rule(a: torch.Tensor, eps: float) -> str | None:
    if a.dim() != 2 or a.shape[0] < 2:
        return f"batch_norm needs (N, D) with N >= 2, got shape {_fmt(a.shape)}"
    return None


def _cross_entropy_rule(logits: torch.Tensor, target: torch.Tensor) -> str | None:
    if logits.dim() != 2:
        return f"cross_entropy needs logits (N, C), got shape {_fmt(logits.shape)}"
    if target.dtype != torch.int64 or target.shape != (logits.shape[0],):
        return f"cross_entropy needs an int64 target of shape ({logits.shape[0]},)"
    if target.numel() and (int(target.min()) < 0 or int(target.max()) >= logits.shape[1]):
        return f"targets must lie in [0, {logits.shape[1]})"
    return None


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if isinstance(x, torch.Tensor) else ()


def _fmt(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


# ---- torch forwards that are not plain methods ---------------------------------


def _batch_norm(a: torch.Tensor, eps: float) -> torch.Tensor:
    return F.batch_norm(a, None, None, training=True, eps=eps)



# ---- param drawers ---------------------------------------------------------------
# Each turns a pick (a small integer the random graph draws) into a param value that suits the
# op's first operand; shrinking goes towards pick 0.

EXPONENTS: Final = (2, 3, -1, 0.5, 1.5)
"""Values of a ``p`` param (``a ** p``). 0 is left out: its gradient at 0 is a
convention (torch says 0) rather than calculus."""


def exponents(x: Any, pick: int) -> float:
    return EXPONENTS[pick % len(EXPONENTS)]


def pool_sizes(x: Any, pick: int) -> int:
    sizes = [k for k in (2, 1, 3) if isinstance(x, torch.Tensor) and x.dim() == 4
             and x.shape[2] % k == 0 and x.shape[3] % k == 0] or [2]
    return sizes[pick % len(sizes)]


def new_shapes(x: Any, pick: int) -> tuple[int, ...]:
    shape = tuple(x.shape) if isinstance(x, torch.Tensor) else ()
    size = math.prod(shape)
    # The reversed shape first: reshaping (n, m) to (m, n) is not a transpose.
    choices = [tuple(reversed(shape)), (size,), (1, size), (size, 1)]
    return choices[pick % len(choices)]


# ---- the table -----------------------------------------------------------------

_T, _I = TENSOR, INDEX

OPS: Final[dict[str, OpSpec]] = {
    spec.name: spec
    for spec in [
        # core
        OpSpec("add", "core", (_T, _T), lambda a, b: a + b, lambda a, b: a + b, "{0} + {1}", "__add__",
               number_slots=(0, 1), domain=_same_or_broadcast, broadcasts=True, doc="elementwise sum"),
        OpSpec("mul", "core", (_T, _T), lambda a, b: a * b, lambda a, b: a * b, "{0} * {1}", "__mul__",
               number_slots=(0, 1), domain=_same_or_broadcast, broadcasts=True, doc="elementwise product"),
        OpSpec("matmul", "core", (_T, _T), lambda a, b: a @ b, lambda a, b: a @ b, "{0} @ {1}", "__matmul__",
               result_size=lambda a, b: math.prod(a[:-1]) * math.prod(b[-1:]),
               domain=_matmul_rule, teaches=("matmul",), doc="2-D matrix product (n, m) @ (m, p)"),
        OpSpec("relu", "core", (_T,), lambda a: a.relu(), lambda a: a.relu(), "{0}.relu()", "relu",
               smooth=False, teaches=("routing",), doc="max(x, 0); gradient 0 at x == 0"),
        OpSpec("sum", "core", (_T,), lambda a: a.sum(), lambda a: a.sum(), "{0}.sum()", "sum",
               concept="shapes", doc="sum of all elements"),
        # follow-ups
        OpSpec("cross_entropy", "followups", (_T, _I), lambda a, t: a.cross_entropy(t),
               lambda a, t: F.cross_entropy(a, t), "{0}.cross_entropy({1})", "cross_entropy",
               domain=_cross_entropy_rule, transcendental=True, keeps_integers=False, concept="numerics",
               doc="fused softmax + negative log-likelihood, mean over the batch"),
        # extensions
        OpSpec("neg", "extensions", (_T,), lambda a: -a, lambda a: -a, "-{0}", "__neg__"),
        OpSpec("sub", "extensions", (_T, _T), lambda a, b: a - b, lambda a, b: a - b, "{0} - {1}", "__sub__",
               number_slots=(0, 1), domain=_same_or_broadcast, broadcasts=True),
        OpSpec("div", "extensions", (_T, _T), lambda a, b: a / b, lambda a, b: a / b, "{0} / {1}", "__truediv__",
               number_slots=(0, 1), domain=_nonzero_divisor, broadcasts=True, transcendental=True,
               keeps_integers=False),
        OpSpec("pow", "extensions", (_T,), lambda a, p: a ** p, lambda a, p: a ** p, "{0} ** {p}", "__pow__",
               params=("p",), param_drawers={"p": exponents}, domain=_pow_rule, transcendental=True,
               keeps_integers=False),
        OpSpec("exp", "extensions", (_T,), lambda a: a.exp(), lambda a: a.exp(), "{0}.exp()", "exp",
               transcendental=True, keeps_integers=False),
        OpSpec("log", "extensions", (_T,), lambda a: a.log(), lambda a: a.log(), "{0}.log()", "log",
               domain=_positive, transcendental=True, keeps_integers=False),
        OpSpec("tanh", "extensions", (_T,), lambda a: a.tanh(), lambda a: a.tanh(), "{0}.tanh()", "tanh",
               transcendental=True, keeps_integers=False),
        OpSpec("sigmoid", "extensions", (_T,), lambda a: a.sigmoid(), lambda a: a.sigmoid(), "{0}.sigmoid()",
               "sigmoid", transcendental=True, keeps_integers=False),
        OpSpec("mean", "extensions", (_T,), lambda a: a.mean(), lambda a: a.mean(), "{0}.mean()", "mean",
               keeps_integers=False, concept="mean_vs_sum"),
        OpSpec("transpose", "extensions", (_T,), lambda a: a.T, lambda a: a.T, "{0}.T", "T",
               domain=_two_d(".T"), concept="shapes"),
        OpSpec("reshape", "extensions", (_T,), lambda a, shape: a.reshape(shape), lambda a, shape: a.reshape(shape),
               "{0}.reshape({shape})", "reshape", params=("shape",), param_drawers={"shape": new_shapes},
               domain=_reshape_rule, concept="shapes"),
        OpSpec("maximum", "extensions", (_T, _T), lambda a, b: a.maximum(b), lambda a, b: a.maximum(b),
               "{0}.maximum({1})", "maximum", domain=_no_ties, smooth=False, concept="routing"),
        OpSpec("max_pool2d", "extensions", (_T,), lambda a, k: a.max_pool2d(k), lambda a, k: F.max_pool2d(a, k),
               "{0}.max_pool2d({k})", "max_pool2d", params=("k",), param_drawers={"k": pool_sizes},
               domain=_pool_rule("max_pool2d"), rank=4, smooth=False, concept="pooling"),
        OpSpec("avg_pool2d", "extensions", (_T,), lambda a, k: a.avg_pool2d(k), lambda a, k: F.avg_pool2d(a, k),
               "{0}.avg_pool2d({k})", "avg_pool2d", params=("k",), param_drawers={"k": pool_sizes},
               domain=_pool_rule("avg_pool2d"), rank=4, keeps_integers=False, concept="pooling"),
        OpSpec("conv2d", "extensions", (_T, _T), lambda a, w: a.conv2d(w), lambda a, w: F.conv2d(a, w),
               "{0}.conv2d({1})", "conv2d", domain=_conv_rule, rank=4,
               result_size=lambda a, w: math.prod(a[:1] + w[:1]) * math.prod(max(x - k + 1, 1) for x, k in zip(a[2:], w[2:]))),
        OpSpec("index", "extensions", (_T, _I), lambda w, ids: w[ids], lambda w, ids: w[ids], "{0}[{1}]",
               "__getitem__", domain=_index_rule, concept="embedding",
               result_size=lambda w, ids: math.prod(ids) * math.prod(w[1:])),
        OpSpec("batch_norm", "extensions", (_T,), lambda a, eps: a.batch_norm(eps=eps), _batch_norm,
               "{0}.batch_norm(eps={eps})", "batch_norm", params=("eps",), defaults={"eps": 1e-5},
               domain=_batch_norm_rule, transcendental=True, keeps_integers=False, concept="batchnorm"),
    ]
}


def op(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}; known ops: {', '.join(OPS)}") from None


def ops_for_level(level: str) -> list[OpSpec]:
    return [spec for spec in OPS.values() if spec.level == level]


def check_operands(spec: OpSpec, operands: Sequence[Any], params: dict[str, Any] | None = None) -> str | None:
    """Why ``operands`` are invalid for ``spec`` (a message), or None when they are valid.

    Operand kinds are checked first, then the op's own rule, then torch must
    accept the call itself (which catches anything the rule did not spell out).
    """
    return checked_apply(spec, operands, params)[0]


def checked_apply(
    spec: OpSpec, operands: Sequence[Any], params: dict[str, Any] | None = None
) -> tuple[str | None, torch.Tensor | None]:
    """``check_operands`` that also returns the torch result it computed (None when invalid).

    Validating a graph needs every step's value anyway; this saves running each op twice.
    """
    params = {**spec.defaults, **(params or {})}
    message = _operand_problem(spec, operands, params)
    if message is not None:
        return message, None
    try:
        return None, spec.apply_torch(operands, params)
    except (RuntimeError, ValueError, TypeError, IndexError) as exc:
        return f"{spec.name} rejects these operands: {str(exc).splitlines()[0]}", None


def _operand_problem(spec: OpSpec, operands: Sequence[Any], params: dict[str, Any]) -> str | None:
    if len(operands) != len(spec.slots):
        return f"{spec.name} takes {len(spec.slots)} operand(s), got {len(operands)}"
    unknown = set(params) - set(spec.params)
    if unknown:
        return f"{spec.name} has no parameter {sorted(unknown)[0]!r}"
    missing = [p for p in spec.params if p not in params]
    if missing:
        return f"{spec.name} needs parameter {missing[0]!r}"
    tensors = 0
    for i, (slot, value) in enumerate(zip(spec.slots, operands)):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if i not in spec.number_slots:
                return f"operand {i + 1} of {spec.name} must be a tensor, not a number"
            continue
        if not isinstance(value, torch.Tensor):
            return f"operand {i + 1} of {spec.name} must be a tensor"
        if slot == INDEX and value.dtype != torch.int64:
            return f"operand {i + 1} of {spec.name} must be an int64 tensor"
        if slot == TENSOR:
            if not value.is_floating_point():
                return f"operand {i + 1} of {spec.name} must be a floating-point tensor"
            tensors += 1
    if tensors == 0:
        return f"{spec.name} needs at least one tensor operand"
    return spec.domain(*operands, **params)


def needs_broadcasting(spec: OpSpec, operands: Sequence[Any]) -> bool:
    """True when the operands' shapes differ, which makes this a broadcasting case."""
    if not spec.broadcasts:
        return False
    shapes = [_shape(x) for x in operands if isinstance(x, torch.Tensor)]
    numbers = any(isinstance(x, (int, float)) for x in operands)
    return len(set(shapes)) > 1 and not numbers
