"""Evidence of use: a resolved use of torch's autograd is proof only on a path the grade executed.

The static scan resolves names; it cannot know whether the line ever runs. A
``compare_with_torch`` method that no grade calls is something a person should
read, not proof. So a static violation stands when its line runs at import
(module level, class bodies, default values and decorators), or when the
function that holds it was called while the submission was graded; the worker
records which of the submission's functions ran (``Tripwires.trace_calls``) for
grades whose scan found a violation. A violation in a function that never ran
becomes a review entry naming the line.
"""

from __future__ import annotations

import ast
import re
from typing import Final, Iterable

from harness.integrity.scan import Findings, ReviewEntry

__all__ = ["scopes_of", "runs_at_import", "settle", "NOT_RUN"]

NOT_RUN: Final = ("torch's autograd, resolved in a function the grade never ran: not proof, but a person should "
                  "read why it is there")
_LINE: Final = re.compile(r"line (\d+): ")

Scope = tuple[str, int]
"""A function as its code object names it: ``(co_name, co_firstlineno)``."""


def _line_of(violation: str) -> int | None:
    match = _LINE.match(violation)
    return int(match.group(1)) if match else None


def _functions(tree: ast.Module) -> list[tuple[int, int, Scope]]:
    """(first body line, last line, scope) of every function and lambda in the file."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            found.append((node.body[0].lineno, node.end_lineno or node.lineno, (node.name, first)))
        elif isinstance(node, ast.Lambda):
            found.append((node.body.lineno, node.end_lineno or node.lineno, ("<lambda>", node.lineno)))
    return found


def scopes_of(source: str, violations: Iterable[str]) -> dict[str, Scope | None]:
    """The innermost function holding each violation's line; None when the line runs at import."""
    try:
        functions = _functions(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError):
        functions = []
    scopes: dict[str, Scope | None] = {}
    for violation in violations:
        line = _line_of(violation)
        holders = [f for f in functions if line is not None and f[0] <= line <= f[1]]
        scopes[violation] = max(holders, key=lambda f: f[0])[2] if holders else None
    return scopes


def runs_at_import(source: str, findings: Findings) -> bool:
    """Whether some violation is on a line that runs when the submission is imported."""
    return any(scope is None for scope in scopes_of(source, findings.violations).values())


def settle(findings: Findings, source: str, ran: set[Scope]) -> Findings:
    """``findings`` with each violation in a function that never ran turned into a review entry."""
    kept, review = [], list(findings.review)
    for violation, scope in scopes_of(source, findings.violations).items():
        if scope is None or scope in ran:
            kept.append(violation)
        else:
            construct = _LINE.sub("", violation, count=1).split(": torch's", 1)[0]
            review.append(ReviewEntry(_line_of(violation), construct, NOT_RUN))
    review.sort(key=lambda e: (e.line or 0, e.why))
    return Findings(tuple(kept), tuple(review))
