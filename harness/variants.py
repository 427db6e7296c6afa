"""The task's two readings, graded each by its own rules: ``--variant tensor`` (the default) and ``function``.

*tensor*: the candidate writes the whole engine (the contract in the README): torch's
autograd is never used, and every use of it is an integrity violation.

*function*: the candidate writes every op as a ``torch.autograd.Function`` with its own
forward and backward, and a ``Tensor`` class that applies them and runs torch's
``backward()``. Torch's engine walks the graph, so the checks of what it does for the
candidate (order, accumulation, linear time, requires_grad, upstream seeding, broadcast
reduction, memory) are not credited; the backward formulas are checked through it. What
the variant allows: subclassing ``torch.autograd.Function`` (``ctx.save_for_backward``,
``ctx.saved_tensors``, ``apply``), torch tensors that require grad, torch's ``.backward()``
and reading torch's ``.grad``. What it does not: a backward formula that is not the
submission's own (a graph node of torch's, such as ``MulBackward0``), ``torch.autograd.grad``,
``torch.func``, forward-mode AD, hooks, and everything the tensor variant forbids besides.
"""

from __future__ import annotations

from typing import Any, Final, Iterable

__all__ = ["VARIANTS", "NOT_CREDITED", "NOT_CREDITED_TEXT", "not_credited", "allowed_violation", "allowed_review",
           "FOREIGN_FORMULA", "kept", "kept_review"]

VARIANTS: Final = ("tensor", "function")

NOT_CREDITED: Final = frozenset({"accumulation", "order", "linearity", "requires_grad", "upstream", "broadcasting",
                                 "memory", "saved_tensors"})
"""Concepts whose checks torch's engine passes for a function-variant submission."""

NOT_CREDITED_TEXT: Final = "not credited in --variant function: torch's engine does this for the submission"

_ALLOWED_STATIC: Final = ("uses torch.autograd.Function:", "calls requires_grad_() on a torch tensor:",
                          "calls torch's .backward() on a torch tensor:", "sets requires_grad on a torch tensor:",
                          "creates a torch tensor with requires_grad=True")
"""Static findings (after ``line N: ``) that are the function variant's own machinery."""

_ALLOWED_RUNTIME: Final = ("called torch's Tensor.backward", "called Tensor.requires_grad_",
                           "set requires_grad=True on a torch tensor", "returned a torch tensor that requires grad",
                           "torch's autograd engine ran a backward pass",
                           "torch's autograd recorded a graph",
                           "the forward pass left torch tensors with autograd history alive for backward",
                           "torch tensors that require grad were left alive by the submission",
                           "carries torch autograd history")
"""Run-time findings that torch's engine running the submission's Functions produces."""

FOREIGN_FORMULA: Final = "torch's autograd computed a backward formula that is not the submission's"
"""The worker's finding, in the function variant, for a graph node that is not one of the submission's Functions."""


def not_credited(concept: str, variant: str) -> str | None:
    """The skip message for a check of ``concept`` under ``variant``, or None when it is credited."""
    return NOT_CREDITED_TEXT if variant == "function" and concept in NOT_CREDITED else None


def _text(finding: str) -> str:
    """A finding without its place: ``line 3: uses ...`` and ``at run time: ... (line 3)`` -> the claim."""
    finding = finding.removeprefix("at run time: ")
    head, sep, rest = finding.partition(": ")
    return rest if sep and head.startswith("line ") else finding


def allowed_violation(finding: str, variant: str) -> bool:
    if variant != "function":
        return False
    text = _text(finding)
    return text.startswith(_ALLOWED_STATIC) or any(text.startswith(a) or f" {a}" in text for a in _ALLOWED_RUNTIME)


def allowed_review(entry: Any, variant: str) -> bool:
    """Reading torch's own ``.grad`` is what a function-variant ``Tensor`` does to fill in its own."""
    from harness.integrity.allowlist import WHY

    why = entry.get("why") if isinstance(entry, dict) else getattr(entry, "why", None)
    return variant == "function" and why == WHY["torch_grad"]


def kept(findings: Iterable[str], variant: str) -> tuple[str, ...]:
    """The violations that stand under ``variant``."""
    return tuple(f for f in findings if not allowed_violation(f, variant))


def kept_review(entries: Iterable[Any], variant: str) -> tuple[Any, ...]:
    """The review entries that stand under ``variant``."""
    return tuple(e for e in entries if not allowed_review(e, variant))
