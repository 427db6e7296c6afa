"""What a worker's reply adds to the integrity verdict, read in the grader's process.

Everything in a reply is untrusted: entries are type-checked and capped, and
only ever add evidence. A reply that says nothing, or never comes, proves
nothing: the absence of a finding is never reported as innocence.
"""

from __future__ import annotations

from typing import Any, Final

from harness.integrity.scan import ReviewEntry

__all__ = ["from_reply", "functions_run", "RECORDED"]

_MAX_ENTRIES: Final = 20
_MAX_TEXT: Final = 300
_MAX_DEPTH: Final = 6
RECORDED: Final = ("torch's autograd recorded a graph (torch's own count of graph nodes, read by the worker's "
                   "loop, moved after the submission was imported)")
"""A count above zero: torch recorded a graph while the submission was graded, however it was hidden."""


def from_reply(reply: dict[str, Any]) -> tuple[list[str], list[ReviewEntry]]:
    """Run-time violations and review entries carried by one reply (or hello) of a worker."""
    violations = [_text(v) for v in _list(reply.get("violations")) if isinstance(v, str)][:_MAX_ENTRIES]
    for where in _autograd_values(reply):
        if where not in violations:
            violations.append(where)
    nodes = reply.get("graph_nodes")
    if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes > 0:
        violations.append(RECORDED)
    review = []
    for entry in _list(reply.get("review"))[:_MAX_ENTRIES]:
        if isinstance(entry, dict) and isinstance(entry.get("construct"), str) and isinstance(entry.get("why"), str):
            line = entry.get("line")
            line = line if isinstance(line, int) and not isinstance(line, bool) and 0 < line < 10**7 else None
            review.append(ReviewEntry(line, _text(entry["construct"]), _text(entry["why"])))
    return violations, review


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: str) -> str:
    """Worker text, capped, with control characters (terminal escapes) made visible."""
    value = "".join(c if c.isprintable() else repr(c)[1:-1] for c in value[:_MAX_TEXT])
    return value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT - 3] + "..."


def _autograd_values(reply: dict[str, Any]) -> list[str]:
    """Every observed torch tensor the worker marked as carrying autograd history, named by where it was."""
    found: list[str] = []
    grads = reply.get("grads")
    for name, grad in (grads.items() if isinstance(grads, dict) else ()):
        if _marked(grad):
            found.append(f"{_text(str(name))}.grad carries torch autograd history (requires_grad or grad_fn)")
    values = reply.get("values")
    for name, value in (values.items() if isinstance(values, dict) else ()):
        if _marked(value):
            found.append(f"the value of {_text(str(name))} carries torch autograd history (requires_grad or grad_fn)")
    results = reply.get("results")
    for i, result in enumerate(results if isinstance(results, list) else ()):
        if isinstance(result, dict):  # a batched run: one reply per graph
            found += [f"graph {i + 1}: {where}" for where in _autograd_values(result)]
    rest = {k: v for k, v in reply.items() if k not in ("grads", "values", "violations", "review", "results")}
    for path in _marked_paths(rest, "", 0):
        found.append(f"{path} carries torch autograd history (requires_grad or grad_fn)")
    return found[:_MAX_ENTRIES]


def _marked(value: Any) -> bool:
    return isinstance(value, dict) and value.get("autograd") is True


def _marked_paths(value: Any, path: str, depth: int) -> list[str]:
    if depth > _MAX_DEPTH or not isinstance(value, dict):
        return []
    if _marked(value):
        return [path or "a reply"]
    found: list[str] = []
    for key, inner in list(value.items())[:200]:
        found += _marked_paths(inner, f"{path}.{key}" if path else str(key), depth + 1)
    return found


def functions_run(reply: dict[str, Any]) -> set[tuple[str, int]]:
    """The submission's functions a reply says ran, as ``(name, first line)``.

    The worker's word on what ran can only turn a static finding into a violation:
    a function it does not mention keeps its finding as a review entry.
    """
    found = set()
    for entry in _list(reply.get("ran"))[:2000]:
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and isinstance(entry[1], int) \
                and not isinstance(entry[1], bool):
            found.add((entry[0][:200], entry[1]))
    return found
