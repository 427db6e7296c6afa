"""The static half of the integrity check: scan a submission's source for torch autograd.

The source is parsed, never imported. Code under ``if __name__ == "__main__":``
is the candidate's own self-test and is not scanned; comments and strings are
not code. The runtime guard in the worker (``evaluator.AutogradGuard``) catches
what a scan cannot see.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["scan", "inspect_source", "Findings", "ReviewEntry"]

_FORBIDDEN_MODULES: Final = ("torch.autograd", "torch.func", "functorch", "harness", "reference")
_FORBIDDEN_ATTRS: Final = {
    ("torch", "autograd"): "torch.autograd",
    ("torch", "func"): "torch.func",
    ("torch", "enable_grad"): "torch.enable_grad",
    ("torch", "set_grad_enabled"): "torch.set_grad_enabled",
    # torch's C internals are where the runtime guard can be switched off (DisableTorchFunction).
    ("torch", "_C"): "torch._C internals",
}
_DYNAMIC_LOOKUPS: Final = {"getattr", "__import__", "import_module", "eval", "exec"}


@dataclass(frozen=True)
class ReviewEntry:
    """A construct that is not proof of cheating but that a person should read."""

    line: int
    construct: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "construct": self.construct, "why": self.why}


@dataclass(frozen=True)
class Findings:
    violations: tuple[str, ...] = ()
    """Proof of torch autograd use: score 0, exit 4."""
    review: tuple[ReviewEntry, ...] = ()
    """Suspicious constructs: the grade stands, the interview bar waits for a person."""


def inspect_source(source: str, filename: str = "<submission>") -> Findings:
    """Everything the static scan finds in ``source``."""
    return Findings(violations=tuple(scan(source, filename)))


def scan(source: str, filename: str = "<submission>") -> list[str]:
    """Violations found in ``source``, each naming its line: ``line 12: uses torch.autograd``."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError:
        return []  # importing it will report the syntax error
    visitor = _Scanner()
    visitor.visit(tree)
    return [f"line {line}: {what}" for line, what in sorted(set(visitor.found))]


class _Scanner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []

    def flag(self, node: ast.AST, what: str) -> None:
        self.found.append((getattr(node, "lineno", 0), what))

    def visit_If(self, node: ast.If) -> None:
        if _is_main_guard(node.test):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        self._check_module(node, module)
        for alias in node.names:
            self._check_module(node, f"{module}.{alias.name}")

    def _check_module(self, node: ast.AST, name: str) -> None:
        for forbidden in _FORBIDDEN_MODULES:
            if name == forbidden or name.startswith(forbidden + "."):
                owner = "the grader's own code" if forbidden in ("harness", "reference") else forbidden
                self.flag(node, f"imports {name} ({owner})")
                return

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name) and (node.value.id, node.attr) in _FORBIDDEN_ATTRS:
            self.flag(node, f"uses {_FORBIDDEN_ATTRS[(node.value.id, node.attr)]}")
        elif node.attr == "Function" and _dotted(node.value).endswith("autograd"):
            self.flag(node, "uses autograd.Function")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "requires_grad_" and not _literal_false(node.args[:1]):
            self.flag(node, "calls requires_grad_() on a torch tensor")
        if name == "backward" and isinstance(func, ast.Attribute) and _is_torch_tensor_expr(func.value):
            self.flag(node, "calls torch's .backward() on a torch tensor")
        if name in _DYNAMIC_LOOKUPS and any(_mentions_autograd(arg) for arg in node.args):
            self.flag(node, f"reaches torch autograd through {name}()")
        elif (name == "getattr" and len(node.args) >= 2 and _dotted(node.args[0]).startswith("torch")
              and _folded(node.args[1]) in ("func", "grad")):
            self.flag(node, f"reaches torch autograd through {name}()")
        if _dotted(func).startswith("torch."):
            for kw in node.keywords:
                if kw.arg == "requires_grad" and not _literal_false([kw.value]):
                    self.flag(node, f"creates a torch tensor with requires_grad=True ({_dotted(func)})")
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if (isinstance(target, ast.Attribute) and target.attr == "requires_grad"
                    and _is_torch_tensor_expr(target.value) and not _literal_false([node.value])):
                self.flag(node, "sets requires_grad on a torch tensor")
        self.generic_visit(node)


def _is_main_guard(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _dotted(node.func) + "()"
    return ""


def _is_torch_tensor_expr(node: ast.AST) -> bool:
    """``x.data`` or ``torch.something(...)``: expressions that hold torch tensors, not the candidate's."""
    dotted = _dotted(node)
    return dotted.endswith(".data") or dotted.startswith("torch.")


def _literal_false(nodes: list[ast.expr]) -> bool:
    return bool(nodes) and isinstance(nodes[0], ast.Constant) and nodes[0].value is False


def _mentions_autograd(node: ast.AST) -> bool:
    """Whether a string built from literals (``"auto" + "grad"`` too) names a way into autograd."""
    text = _folded(node)
    if text is None:
        return False
    return any(word in text for word in ("autograd", "enable_grad", "_C", "Function"))


def _folded(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.JoinedStr):
        parts = [_folded(v) for v in node.values if isinstance(v, ast.Constant)]
        return "".join(p for p in parts if p)
    return None
