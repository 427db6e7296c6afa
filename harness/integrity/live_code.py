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


_WATCHED_NAMES: Final = ("__name__", "TYPE_CHECKING", *_TYPING)
_BINDERS: Final = frozenset({ast.alias, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Global, ast.Nonlocal,
                             ast.arg, ast.MatchAs, ast.MatchStar, ast.MatchMapping, ast.ExceptHandler})
"""Node types that bind a name (besides a stored or deleted ``Name``), whichever name it is."""


class _Survey:
    """What one walk of the tree says about the guards' names: every binding of them, the star imports, the
    ``from`` import each alias belongs to, attribute writes, and the nodes that reach a namespace by name."""

    def __init__(self, tree: ast.AST) -> None:
        self.bindings: dict[str, list[ast.AST]] = {name: [] for name in _WATCHED_NAMES}
        self.stars: list[ast.ImportFrom] = []
        self.parents: dict[int, ast.ImportFrom] = {}
        self.written: set[str] = set()
        """Attribute names stored or deleted, or set by ``setattr``/``delattr`` with a literal name."""
        self.computed_setattr = False
        """``setattr``/``delattr`` with a name computed at run time on something not the file's own class."""
        self.lookups: list[ast.AST] = []
        classes = {"self", "cls"}
        setattrs: list[ast.Call] = []
        bindings = self.bindings
        for node in ast.walk(tree):
            kind = type(node)
            if kind is ast.Name:
                if node.id in bindings and type(node.ctx) is not ast.Load:
                    bindings[node.id].append(node)
            elif kind is ast.Attribute:
                if type(node.ctx) is not ast.Load:
                    self.written.add(node.attr)
                elif node.attr in _NAMESPACE_ATTRIBUTES:
                    self.lookups.append(node)
            elif kind is ast.Call:
                func = node.func
                name = func.id if type(func) is ast.Name else func.attr if type(func) is ast.Attribute else None
                if name in _NAME_LOOKUPS:
                    self.lookups.append(node)
                elif name in ("setattr", "delattr") and type(func) is ast.Name and len(node.args) >= 2:
                    setattrs.append(node)
            elif kind is ast.ImportFrom:
                for alias in node.names:
                    self.parents[id(alias)] = node
                if any(a.name == "*" for a in node.names):
                    self.stars.append(node)
            elif kind in _BINDERS:
                if kind is ast.ClassDef:
                    classes.add(node.name)
                for name in _bound_names(node):
                    if name in bindings:
                        bindings[name].append(node)
        for call in setattrs:
            name, receiver = call.args[1], call.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self.written.add(name.value)
            elif not (isinstance(receiver, ast.Name) and receiver.id in classes):
                self.computed_setattr = True

    def binds(self, name: str) -> list[ast.AST]:
        """Every node that binds ``name``, star imports included where they may bind it: a dunder only from a
        module outside the allowlist (whose ``__all__`` may list it), any other name from any module but typing
        (whose star import binds ``TYPE_CHECKING`` to False)."""
        stars = [node for node in self.stars if node.level or (
            (node.module or "") not in ALLOWED_MODULES if name.startswith("__") else node.module not in _TYPING)]
        return self.bindings[name] + stars

    def writes(self, attr: str) -> bool:
        return attr in self.written or self.computed_setattr

    def looks_names_up(self, outside: set[int] = frozenset()) -> bool:  # type: ignore[assignment]
        return any(id(node) not in outside for node in self.lookups)


def binds(tree: ast.AST, name: str) -> list[ast.AST]:
    """Every node of ``tree`` that binds ``name`` (one of the guards' names), in any binding form."""
    return _Survey(tree).binds(name)


def _typing_guards(survey: _Survey) -> tuple[bool, frozenset[str]]:
    """Whether ``TYPE_CHECKING`` and ``typing.TYPE_CHECKING`` have typing's meaning in this file.

    The name must be imported from ``typing`` (a name never imported would be looked up in
    builtins, which a file can fill) and bound nowhere else; ``typing`` must be the module,
    imported as itself and bound nowhere else; and no code may write the attribute.
    """
    if survey.writes("TYPE_CHECKING") or survey.looks_names_up():
        return False, frozenset()
    parents = survey.parents

    def from_typing(node: ast.AST) -> bool:
        parent = parents.get(id(node))
        return (isinstance(node, ast.alias) and node.asname is None and isinstance(parent, ast.ImportFrom)
                and parent.module in _TYPING and not parent.level)

    def typing_module(node: ast.AST, module: str) -> bool:
        return (isinstance(node, ast.alias) and id(node) not in parents and node.name.split(".")[0] == module
                and node.asname in (None, module))

    name_bindings = survey.binds("TYPE_CHECKING")
    star_typing = any(node.module in _TYPING and not node.level for node in survey.stars)
    name_ok = (bool(name_bindings) or star_typing) and all(from_typing(node) for node in name_bindings)
    modules = frozenset(module for module in _TYPING
                        if (found := survey.binds(module)) and all(typing_module(node, module) for node in found))
    return name_ok, modules


def skipped_blocks(tree: ast.Module) -> tuple[set[int], bool, list[ast.AST]]:
    """Ids of statements that never run at import, whether the ``__main__`` guard can be trusted, and the
    nodes that bind ``__name__``.

    A guard that cannot be trusted (see the module's docstring) skips nothing: its block is
    scanned like everything else.
    """
    survey = _Survey(tree)
    name_bindings = survey.binds("__name__")
    trusted_main = not name_bindings and not survey.looks_names_up() and not survey.writes("__name__")
    typing_name, typing_modules = _typing_guards(survey)
    skipped: set[int] = set()
    main_blocks: list[ast.If] = []
    for node in tree.body:
        if isinstance(node, ast.If) and ((trusted_main and _is_main_guard(node.test)) or
                                         _is_type_checking(node.test, typing_name, typing_modules)):
            skipped.update(id(stmt) for stmt in node.body)
            if _is_main_guard(node.test):
                main_blocks.append(node)
    skipped.update(id(d) for d in _self_test_only(tree, main_blocks, survey))
    return skipped, trusted_main, name_bindings


def _self_test_only(tree: ast.Module, main_blocks: list[ast.If], survey: _Survey) -> list[ast.stmt]:
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
    if survey.looks_names_up(main_ids):
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


def _reaches_namespace(n: ast.AST) -> bool:
    """Whether ``n`` reaches objects by names computed at run time (a namespace, a module table, a frame)."""
    if isinstance(n, ast.Call) and (isinstance(n.func, ast.Name) and n.func.id in _NAME_LOOKUPS or
                                    isinstance(n.func, ast.Attribute) and n.func.attr in _NAME_LOOKUPS):
        return True
    return isinstance(n, ast.Attribute) and n.attr in _NAMESPACE_ATTRIBUTES
