"""The static half of the integrity check: an allowlist scan of a submission's source.

The source is parsed, never imported. Every name is resolved to a dotted path
through imports, assignments, loop variables over literals, function returns
and parameters, ``getattr`` with names folded from string literals,
``sys.modules[...]``, ``vars(m)[...]`` and attributes of allowed modules that
are modules themselves (``torch.sys`` is ``sys``). ``harness.integrity.allowlist``
says what each path is. Two verdicts come out, never confused:

* violations (proof, "line N: ..."): a resolved use of torch's autograd, or an
  import of the grader's own code;
* review entries (line, construct, why): everything a legitimate engine does
  not need: imports outside the allowlist, torch's C internals and mode
  stacks, dynamic code, interpreter and process access, dunder walks,
  attribute names of torch's autograd on objects the scan could not resolve.

Not scanned: code under ``if __name__ == "__main__":`` (the candidate's own
self-test; functions called only from there too) and ``if TYPE_CHECKING:``
blocks, while their guards provably have their standard meaning (nothing
rebinds ``__name__`` or ``TYPE_CHECKING`` in any binding form,
``harness.integrity.live_code``), annotations under ``from __future__ import
annotations``, comments and strings (except constant strings handed to
``exec``/``eval``, which are scanned as code). The runtime tripwires (``harness.sandbox.worker.tripwires``) see
what no reading of the source can.
"""

from __future__ import annotations

import ast

from harness.integrity.allowlist import WHY
from harness.integrity.findings import Findings, Found, ReviewEntry
from harness.integrity.scanner import scan_tree

__all__ = ["inspect_source", "member_line", "Findings", "ReviewEntry"]


def inspect_source(source: str, filename: str = "<submission>") -> Findings:
    """Everything the static scan finds in ``source``: violations and review entries, each with its line."""
    found = Found()
    try:
        tree = ast.parse(source, filename)
        scan_tree(tree, found, depth=0, line=None)
    except (SyntaxError, ValueError):
        return Findings()  # importing it will report the error
    except RecursionError:  # nested deeper than the scan can follow: say so rather than crash or stay silent
        return Findings(review=(ReviewEntry(1, "the whole file", WHY["too_deep"]),))
    proof = found.proof()
    proven_lines = {line for line, _ in proof}
    # A name that only looks like autograd adds nothing on a line already proven to use it.
    review = sorted((e for e in found.review.values() if not (e.why == WHY["unresolved"] and e.line in proven_lines)),
                    key=lambda e: (e.line or 0, e.why))
    return Findings(tuple(f"line {line}: {what}" for line, what in proof), tuple(review))


def member_line(source: str, class_name: str, member: str) -> int | None:
    """The line where ``class_name.member`` is defined in ``source``, or the class's own line, or None."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == member:
                    return item.lineno
            return node.lineno
    return None
