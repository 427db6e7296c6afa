"""Which code of a submission runs at import: everything but its self-test.

The ``__main__`` block, ``TYPE_CHECKING`` blocks, and module-level functions and classes only
the self-test uses never run when the grader imports the file, so the static scan skips them
(unless the file makes the guard untrustworthy by assigning ``__name__``).
"""

from __future__ import annotations

import ast
from typing import Final

__all__ = ["skipped_blocks"]


def _is_main_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(mains) == 1


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING" and isinstance(test.value, ast.Name)
        and test.value.id == "typing")


def _assigns_name(tree: ast.AST, name: str) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name.split(".")[0]) == name:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.arg) and node.arg == name:
            return True
    return False


def skipped_blocks(tree: ast.Module) -> tuple[set[int], bool]:
    """Ids of statements that never run at import, and whether the ``__main__`` guard can be trusted.

    The guard cannot be trusted when the file assigns ``__name__`` (or shadows
    ``TYPE_CHECKING``): then those blocks are scanned like everything else.
    """
    trusted_main = not _assigns_name(tree, "__name__")
    trusted_typing = not any(isinstance(n, ast.Name) and n.id == "TYPE_CHECKING" and not isinstance(n.ctx, ast.Load)
                             for n in ast.walk(tree))
    skipped: set[int] = set()
    main_blocks: list[ast.If] = []
    for node in tree.body:
        if isinstance(node, ast.If) and ((trusted_main and _is_main_guard(node.test)) or
                                         (trusted_typing and _is_type_checking(node.test))):
            skipped.update(id(stmt) for stmt in node.body)
            if _is_main_guard(node.test):
                main_blocks.append(node)
    skipped.update(id(d) for d in _self_test_only(tree, main_blocks))
    return skipped, trusted_main


def _self_test_only(tree: ast.Module, main_blocks: list[ast.If]) -> list[ast.stmt]:
    """Module-level functions and classes used only by the self-test (directly or through each other)."""
    defs: dict[str, ast.stmt] = {}
    duplicates: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in defs:
                duplicates.add(node.name)
            defs[node.name] = node
    if not main_blocks or not defs:
        return []
    main_ids = {id(n) for block in main_blocks for stmt in block.body for n in ast.walk(stmt)}
    users: dict[str, set[str]] = {name: set() for name in defs}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
               and id(n) not in main_ids}

    def record(node: ast.AST, where: str) -> None:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in users and (where != n.id):
                users[n.id].add("main" if id(n) in main_ids else where)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            outer: list[ast.AST] = list(node.decorator_list)
            if isinstance(node, ast.ClassDef):
                outer += node.bases + [k.value for k in node.keywords]
                inner: list[ast.AST] = node.body
            else:
                outer += [d for d in node.args.defaults + node.args.kw_defaults if d is not None]
                inner = node.body
            for n in outer:
                record(n, "live")
            for n in inner:
                record(n, node.name)
        else:
            record(node, "live")
    if _looks_names_up(tree, main_ids):
        return []  # a function may be reached by a name built at run time: nothing is the self-test's alone
    test_only = {name for name, where in users.items()
                 if where and name not in duplicates and name not in strings}
    changed = True
    while changed:
        changed = False
        for name in list(test_only):
            if not users[name] <= ({"main"} | test_only):
                test_only.discard(name)
                changed = True
    return [defs[name] for name in test_only if "main" in users[name] or users[name] & test_only]


_NAME_LOOKUPS: Final = frozenset({"locals", "globals", "vars", "eval", "exec", "compile", "__import__", "import_module"})
"""Ways to reach a module-level function by a name built at run time (``getattr`` needs the module object,
which only these, ``sys.modules`` and ``__dict__`` give)."""


def _looks_names_up(tree: ast.Module, main_ids: set[int]) -> bool:
    """Whether code outside the self-test reaches objects by names computed at run time."""
    for n in ast.walk(tree):
        if id(n) in main_ids:
            continue
        if isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id in _NAME_LOOKUPS or
                                        isinstance(n.func, ast.Attribute) and n.func.attr in _NAME_LOOKUPS):
            return True
        if isinstance(n, ast.Attribute) and n.attr in ("__dict__", "modules", "f_globals", "f_locals"):
            return True
    return False
