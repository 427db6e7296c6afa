"""Which code of a submission runs at import: everything but its self-test and its type-only imports.

The ``__main__`` block, ``TYPE_CHECKING`` blocks, and module-level functions and classes only
the self-test uses never run when the grader imports the file, so the static scan skips them;
but only while their guard provably has its standard meaning:

* ``if TYPE_CHECKING:`` is skipped when ``TYPE_CHECKING`` is imported from ``typing`` (``if
  typing.TYPE_CHECKING:`` when ``typing`` is the module) and nothing else in the file binds that
  name or writes ``typing``'s attribute;
* ``if __name__ == "__main__":`` is skipped when nothing binds ``__name__`` and nothing reaches
  the module's namespace by a name computed at run time.

"Binds" is any binding form Python has: assignment, augmented and annotated assignment, the
walrus, ``import`` and ``import ... as``, a star import, ``def``, ``class``, ``for``, ``with ... as``,
``except ... as``, a match capture, ``global``/``nonlocal``, ``del``, an argument name. Anything
else makes the block code that runs, and it is scanned like the rest.
"""

from __future__ import annotations

import ast
from typing import Final

from harness.integrity.allowlist import ALLOWED_MODULES

__all__ = ["skipped_blocks", "binds"]

_TYPING: Final = ("typing", "typing_extensions")


def _is_main_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(mains) == 1


def _is_type_checking(test: ast.expr, name: bool = True, modules: frozenset[str] = frozenset(_TYPING)) -> bool:
    """``TYPE_CHECKING`` (when ``name`` is trusted) or ``typing.TYPE_CHECKING`` (when ``typing`` is in ``modules``)."""
    return (name and isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        and isinstance(test.value, ast.Name) and test.value.id in modules)


def _bound_names(node: ast.AST) -> list[str]:
    """The names ``node`` itself binds, in any binding form ("*" for a star import, which may bind any)."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [node.id]  # assignment, augmented, annotated, walrus, for, with-as, comprehension, del
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[0]]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    return []


def binds(tree: ast.AST, name: str) -> list[ast.AST]:
    """Every node of ``tree`` that binds ``name``, star imports included where they may bind it: a dunder
    only from a module outside the allowlist (whose ``__all__`` may list it), any other name from any
    module but typing (whose star import binds ``TYPE_CHECKING`` to False)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            module = node.module or ""
            if node.level or (module not in ALLOWED_MODULES if name.startswith("__") else module not in _TYPING):
                found.append(node)
            continue
        if name in _bound_names(node):
            found.append(node)
    return found


def _typing_guards(tree: ast.Module) -> tuple[bool, frozenset[str]]:
    """Whether ``TYPE_CHECKING`` and ``typing.TYPE_CHECKING`` have typing's meaning in this file.

    The name must be imported from ``typing`` (a name never imported would be looked up in
    builtins, which a file can fill) and bound nowhere else; ``typing`` must be the module,
    imported as itself and bound nowhere else; and no code may write the attribute.
    """
    if _writes_attribute(tree, "TYPE_CHECKING") or _looks_names_up(tree, set()):
        return False, frozenset()
    parents = {id(alias): node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}

    def from_typing(node: ast.AST) -> bool:
        parent = parents.get(id(node))
        return (isinstance(node, ast.alias) and node.asname is None and isinstance(parent, ast.ImportFrom)
                and parent.module in _TYPING and not parent.level)

    def typing_module(node: ast.AST, module: str) -> bool:
        return (isinstance(node, ast.alias) and id(node) not in parents and node.name.split(".")[0] == module
                and node.asname in (None, module))

    name_bindings = binds(tree, "TYPE_CHECKING")
    star_typing = any(isinstance(node, ast.ImportFrom) and node.module in _TYPING and not node.level
                      and any(a.name == "*" for a in node.names) for node in ast.walk(tree))
    name_ok = (bool(name_bindings) or star_typing) and all(from_typing(node) for node in name_bindings)
    modules = frozenset(module for module in _TYPING
                        if (found := binds(tree, module)) and all(typing_module(node, module) for node in found))
    return name_ok, modules


def _writes_attribute(tree: ast.Module, attr: str) -> bool:
    """An attribute ``attr`` stored or deleted anywhere, or ``setattr``/``delattr`` with that name, or with a
    name computed at run time on anything but the file's own classes (which no module is)."""
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)} | {"self", "cls"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == attr and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and len(node.args) >= 2:
            name, receiver = node.args[1], node.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                if name.value == attr:
                    return True
            elif not (isinstance(receiver, ast.Name) and receiver.id in classes):
                return True
    return False


def skipped_blocks(tree: ast.Module) -> tuple[set[int], bool]:
    """Ids of statements that never run at import, and whether the ``__main__`` guard can be trusted.

    A guard that cannot be trusted (see the module's docstring) skips nothing: its block is
    scanned like everything else.
    """
    trusted_main = not binds(tree, "__name__") and not _looks_names_up(tree, set()) \
        and not _writes_attribute(tree, "__name__")
    typing_name, typing_modules = _typing_guards(tree)
    skipped: set[int] = set()
    main_blocks: list[ast.If] = []
    for node in tree.body:
        if isinstance(node, ast.If) and ((trusted_main and _is_main_guard(node.test)) or
                                         _is_type_checking(node.test, typing_name, typing_modules)):
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


_NAMESPACE_ATTRIBUTES: Final = frozenset({"__dict__", "modules", "f_globals", "f_locals", "__globals__", "__builtins__",
                                         "getmodule"})
"""Attributes that reach a module's namespace (``sys.modules``, ``inspect.getmodule``, a function's globals)."""


def _looks_names_up(tree: ast.Module, main_ids: set[int]) -> bool:
    """Whether code outside the self-test reaches objects by names computed at run time."""
    for n in ast.walk(tree):
        if id(n) in main_ids:
            continue
        if isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id in _NAME_LOOKUPS or
                                        isinstance(n.func, ast.Attribute) and n.func.attr in _NAME_LOOKUPS):
            return True
        if isinstance(n, ast.Attribute) and n.attr in _NAMESPACE_ATTRIBUTES:
            return True
    return False
