"""What every name of the live code may be bound to, scope by scope.

``Facts`` collects, flow-insensitively, the bindings of names and attributes (imports,
assignments, loop variables over literals, parameters, definitions), the definitions and the
call sites of the code that runs at import; ``Resolver`` reads them.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Iterator

from harness.integrity.canonical import canonical
from harness.integrity.live_code import skipped_blocks

__all__ = ["Binding", "Facts"]


@dataclass(frozen=True)
class Binding:
    kind: str  # "module", "expr", "def", "iter", "items", "param", "unknown"
    value: Any = None
    extra: Any = None
    scope: int = 0
    """The function (or class body) the name is bound in: id of its node, 0 for the module."""


class Facts:
    """Flow-insensitive facts about the live code: bindings of names and attributes, definitions, call sites."""

    def __init__(self, tree: ast.Module, outer: Facts | None = None) -> None:
        self.outer = outer
        """The file's facts, when this is code handed to exec(): its names are the file's module names."""
        self.skipped, self.trusted_main, self.name_bindings = skipped_blocks(tree)
        self.future_annotations = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                                      and any(a.name == "annotations" for a in n.names) for n in tree.body)
        self.names: dict[str, list[Binding]] = {}
        self.attrs: dict[str, list[ast.expr]] = {}
        self.defined: set[str] = set()
        """Attribute names the file defines itself (methods, class attributes, attributes it assigns)."""
        self.classes: set[str] = set()
        self.functions: dict[str, list[ast.AST]] = {}
        self.stars: list[str] = []
        self.calls: dict[str, list[ast.Call]] = {}
        self.escaped: set[str] = set()
        """Function names (and ``.method`` names) used other than by calling them: not every call is known."""
        self.methods: set[int] = set()
        self.imported: set[str] = set()
        """Modules named by import statements (canonical names), flagged there when not allowed."""
        self.scope_of: dict[int, int] = {}
        """Scope of every name in the live code (id of a Name node -> scope id)."""
        self.parent_scope: dict[int, int] = {0: 0}
        self._scope = 0
        self._globals: dict[int, set[str]] = {}
        self._called: set[int] = set()
        self._loads: list[ast.AST] = []
        self._walk(tree, 0, 0)
        for node in self._loads:
            if id(node) not in self._called:
                self.escaped.add(node.id if isinstance(node, ast.Name) else "." + node.attr)

    def _walk(self, node: ast.AST, scope: int, function_scope: int) -> None:
        """Collect facts in source order, knowing which scope each binding and name belongs to."""
        self._scope = scope
        self._collect(node)
        if isinstance(node, ast.Call):
            self._called.add(id(node.func))
        elif isinstance(node, ast.Name):
            self.scope_of[id(node)] = scope
            if isinstance(node.ctx, ast.Load):
                self._loads.append(node)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            self._loads.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            outer = list(getattr(node, "decorator_list", [])) + node.args.defaults + [
                d for d in node.args.kw_defaults if d is not None]
            if getattr(node, "returns", None) is not None:
                outer.append(node.returns)
            inner = id(node)
            self.parent_scope[inner] = function_scope
            for child in outer:
                self._walk(child, scope, function_scope)
            self._scope = inner
            self._params(node, node.args)
            for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs + [node.args.vararg,
                                                                                       node.args.kwarg]:
                if a is not None and a.annotation is not None:
                    self._walk(a.annotation, scope, function_scope)
            body = node.body if isinstance(node.body, list) else [node.body]
            for child in body:
                if id(child) not in self.skipped:
                    self._walk(child, inner, inner)
            return
        if isinstance(node, ast.ClassDef):
            for child in node.decorator_list + node.bases + [k.value for k in node.keywords]:
                self._walk(child, scope, function_scope)
            inner = id(node)
            self.parent_scope[inner] = function_scope
            for child in node.body:
                if id(child) not in self.skipped:
                    self._walk(child, inner, function_scope)
            return
        for child in ast.iter_child_nodes(node):
            if id(child) not in self.skipped:
                self._walk(child, scope, function_scope)

    def bind(self, name: str, binding: Binding) -> None:
        scope = 0 if name in self._globals.get(self._scope, ()) else self._scope
        self.names.setdefault(name, []).append(Binding(binding.kind, binding.value, binding.extra, scope))

    def lookup(self, name: str, scope: int) -> list[Binding]:
        """The bindings a name has where it is used: its own scope's, else the enclosing functions', else the module's."""
        bindings = self.names.get(name, [])
        while True:
            found = [b for b in bindings if b.scope == scope]
            if found:
                return found
            if scope == 0:
                return self.outer.lookup(name, 0) if self.outer is not None else []
            scope = self.parent_scope.get(scope, 0)

    def bindings_of(self, node: ast.Name) -> list[Binding]:
        return self.lookup(node.id, self.scope_of.get(id(node), 0))

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                self.imported.add(canonical(a.name))
                if a.asname:
                    self.bind(a.asname, Binding("module", a.name))
                else:
                    top = a.name.split(".")[0]
                    self.bind(top, Binding("module", top))
        elif isinstance(node, ast.ImportFrom):
            if node.module and not node.level:
                self.imported.add(canonical(node.module))
            for a in node.names:
                if a.name == "*":
                    if node.module and not node.level:
                        self.stars.append(node.module)
                elif node.level or not node.module:
                    self.bind(a.asname or a.name, Binding("unknown"))
                else:
                    self.bind(a.asname or a.name, Binding("module", f"{node.module}.{a.name}"))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                self._assign(target, node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._assign(node.target, node.value)
            elif isinstance(node.target, ast.Attribute):
                self.defined.add(node.target.attr)
        elif isinstance(node, ast.AugAssign):
            self._assign(node.target, ast.BinOp(node.target, node.op, node.value))
        elif isinstance(node, ast.NamedExpr):
            self._assign(node.target, node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            self._assign_iter(node.target, node.iter)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._unknown(node.optional_vars)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self.bind(node.name, Binding("unknown"))
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            self.bind(node.name, Binding("unknown"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.bind(node.name, Binding("def", node))
            self.functions.setdefault(node.name, []).append(node)
            self.defined.add(node.name)
        elif isinstance(node, ast.Global):
            self._globals.setdefault(self._scope, set()).update(node.names)
        elif isinstance(node, ast.ClassDef):
            self.bind(node.name, Binding("def", node))
            self.classes.add(node.name)
            self.defined.add(node.name)
            self.methods.update(id(item) for item in node.body
                                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
            for item in node.body:
                for target in _class_body_targets(item):
                    self.defined.add(target)
                if isinstance(item, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                        for t in item.targets):
                    self.defined.update(c.value for c in ast.walk(item.value)
                                        if isinstance(c, ast.Constant) and isinstance(c.value, str))
                if isinstance(item, ast.Assign):
                    for t in item.targets:
                        if isinstance(t, ast.Name):
                            self.attrs.setdefault(t.id, []).append(item.value)
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                self.calls.setdefault(node.func.id, []).append(node)
                if node.func.id == "setattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                        and isinstance(node.args[1].value, str):
                    self.defined.add(node.args[1].value)
            elif isinstance(node.func, ast.Attribute):
                self.calls.setdefault("." + node.func.attr, []).append(node)

    def _assign(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, Binding("expr", value))
        elif isinstance(target, ast.Attribute):
            self.defined.add(target.attr)
            self.attrs.setdefault(target.attr, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) and not any(
                    isinstance(e, ast.Starred) for e in target.elts + value.elts):
                for t, v in zip(target.elts, value.elts):
                    self._assign(t, v)
            else:
                self._unknown(target)
        elif isinstance(target, ast.Starred):
            self._unknown(target.value)

    def _assign_iter(self, target: ast.expr, iterable: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, Binding("iter", iterable))
            return
        if (isinstance(target, ast.Tuple) and len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts)
                and isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute)
                and iterable.func.attr == "items" and not iterable.args):
            # for k, v in D.items(): keys and values of D, looked up when resolved
            self.bind(target.elts[0].id, Binding("items", iterable.func.value, 0))
            self.bind(target.elts[1].id, Binding("items", iterable.func.value, 1))
            return
        self._unknown(target)

    def _unknown(self, target: ast.expr) -> None:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                self.bind(n.id, Binding("unknown"))
            elif isinstance(n, ast.Attribute):
                self.defined.add(n.attr)

    def _params(self, func: ast.AST, args: ast.arguments) -> None:
        positional = args.posonlyargs + args.args
        for i, a in enumerate(positional):
            self.bind(a.arg, Binding("param", func, i))
        for a in args.kwonlyargs:
            self.bind(a.arg, Binding("param", func, a.arg))
        for a in (args.vararg, args.kwarg):
            if a is not None:
                self.bind(a.arg, Binding("unknown"))


def _class_body_targets(item: ast.stmt) -> Iterator[str]:
    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield item.name
    elif isinstance(item, ast.Assign):
        for t in item.targets:
            yield from (n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
        yield item.target.id
