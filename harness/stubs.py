"""Members a candidate has not written yet: a ``def`` whose body is only a placeholder.

The template ships every member as a stub that raises ``NotImplementedError``; a candidate
mid-interview leaves some that way, or as ``pass``, ``...`` or a docstring alone. Such a
member is "not attempted", exactly like one that is not there: its checks wait for it and
score nothing, instead of failing with the placeholder's exception (or with whatever a
``None`` result breaks further on). Read from the source alone; nothing runs.
"""

from __future__ import annotations

import ast
from typing import Final

__all__ = ["stub_members", "MODULE_MEMBERS"]

MODULE_MEMBERS: Final = ("no_grad",)
"""Module-level functions of the contract (a stub of one is a follow-up not attempted)."""


def stub_members(tree: ast.Module, class_name: str) -> dict[str, str]:
    """The members of ``class_name`` (and the module's ``no_grad``) whose last definition is a placeholder,
    each with what its body is (``raises NotImplementedError``, ``is only pass`` ...)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            found = _placeholders(node.body)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in MODULE_MEMBERS:
            what = placeholder(node)
            if what:
                found[node.name] = what
            else:
                found.pop(node.name, None)
    return found


def _placeholders(body: list[ast.stmt]) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            what = placeholder(node)
            if what:
                found[node.name] = what
            else:
                found.pop(node.name, None)  # a later definition of the same name replaces the stub
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found.pop(target.id, None)
    return found


def placeholder(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """What makes ``function``'s body a placeholder ('' when it does any work)."""
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if not body:
        return "its body is only a docstring"
    if len(body) == 1 and isinstance(body[0], ast.Raise) and _not_implemented(body[0].exc):
        return "its body only raises NotImplementedError"
    for i, statement in enumerate(body):
        # Started and left unfinished (``x = self.data`` then the template's raise): names bound and nothing
        # called before the raise, so every call raises having done nothing.
        if isinstance(statement, ast.Raise) and _not_implemented(statement.exc):
            if all(_binds_only(s) for s in body[:i]):
                return "it raises NotImplementedError before doing anything"
            break
    if all(isinstance(s, ast.Pass) or _is_ellipsis(s) for s in body):
        return "its body is only " + ("pass" if any(isinstance(s, ast.Pass) for s in body) else "...")
    return ""


def _binds_only(statement: ast.stmt) -> bool:
    """A statement that only binds names to what is already there (``x = self.data``): no call, no control flow."""
    if isinstance(statement, ast.Pass) or _is_ellipsis(statement):
        return True
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
        return False
    return not any(isinstance(n, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Lambda))
                   for n in ast.walk(statement))


def _not_implemented(exc: ast.expr | None) -> bool:
    if isinstance(exc, ast.Call):
        exc = exc.func
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _is_ellipsis(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        and statement.value.value is Ellipsis
