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
self-test; functions called only from there too), ``if TYPE_CHECKING:``
blocks, annotations under ``from __future__ import annotations``, comments and
strings (except constant strings handed to ``exec``/``eval``, which are
scanned as code). The runtime tripwires (``harness.integrity.tripwires``) see
what no reading of the source can.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import itertools
import sys
import types
from dataclasses import dataclass
from typing import Any, Final, Iterable, Iterator

from harness.integrity.allowlist import (ALLOWED_MODULES, AUTOGRAD_ATTRIBUTES, DUNDER_WALKS, FRAME_ATTRIBUTES,
                                         TENSOR_AUTOGRAD_ATTRIBUTES, WHY, classify, classify_module,
                                         dangerous_builtin)

__all__ = ["inspect_source", "member_line", "Findings", "ReviewEntry"]

_MAX_STRINGS: Final = 64
"""Above this many possible values a folded string counts as computed."""
_MAX_EXEC_DEPTH: Final = 3
_CONSTRUCT_CHARS: Final = 80
_NOT_TENSOR_METHODS: Final = frozenset({"item", "tolist", "size", "dim", "numel", "numpy", "is_floating_point",
                                        "data_ptr", "element_size", "stride", "storage_offset", "is_contiguous",
                                        "equal", "allclose", "__len__", "__repr__", "__str__", "__bool__"})


@dataclass(frozen=True)
class ReviewEntry:
    """A construct that is not proof of cheating but that a person should read."""

    line: int | None
    """Line in the submission; None for what was seen at run time with no single line to name."""
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
    """Everything the static scan finds in ``source``: violations and review entries, each with its line."""
    try:
        tree = ast.parse(source, filename)
    except (SyntaxError, ValueError):
        return Findings()  # importing it will report the error
    found = _Found()
    _scan_tree(tree, found, depth=0, line=None)
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


class _Found:
    def __init__(self) -> None:
        self.violations: set[tuple[int, str, str]] = set()
        self.review: dict[tuple[int | None, str], ReviewEntry] = {}

    def violation(self, line: int, what: str, path: str = "") -> None:
        self.violations.add((line, what, path))

    def proof(self) -> list[tuple[int, str]]:
        """Violations by line, one per path; a path whose longer spelling is flagged on the same line is dropped."""
        paths = {(line, path) for line, _, path in self.violations if path}
        kept: dict[tuple[int, str], str] = {}
        for line, what, path in sorted(self.violations):
            if path and any(l == line and other.startswith(path + ".") for l, other in paths):
                continue
            kept.setdefault((line, path or what), what)
        return sorted((line, what) for (line, _), what in kept.items())

    def flag(self, line: int, construct: str, why: str) -> None:
        self.review.setdefault((line, why), ReviewEntry(line, construct, why))


def _scan_tree(tree: ast.Module, found: _Found, depth: int, line: int | None) -> None:
    facts = _Facts(tree)
    _Scanner(facts, found, depth, line).run(tree)


def _construct(node: ast.AST) -> str:
    try:
        text = " ".join(ast.unparse(node).split())
    except Exception:  # a node unparse cannot render is still flagged, by its kind
        text = type(node).__name__
    return text if len(text) <= _CONSTRUCT_CHARS else text[:_CONSTRUCT_CHARS - 3] + "..."


# ---- which code runs at import: everything but the self-test ---------------------------------


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


def _skipped_blocks(tree: ast.Module) -> tuple[set[int], bool]:
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


# ---- facts: what every name may be bound to ----------------------------------------------------


@dataclass(frozen=True)
class _Binding:
    kind: str  # "module", "expr", "def", "iter", "items", "param", "unknown"
    value: Any = None
    extra: Any = None
    scope: int = 0
    """The function (or class body) the name is bound in: id of its node, 0 for the module."""


class _Facts:
    """Flow-insensitive facts about the live code: bindings of names and attributes, definitions, call sites."""

    def __init__(self, tree: ast.Module) -> None:
        self.skipped, self.trusted_main = _skipped_blocks(tree)
        self.future_annotations = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                                      and any(a.name == "annotations" for a in n.names) for n in tree.body)
        self.names: dict[str, list[_Binding]] = {}
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

    def bind(self, name: str, binding: _Binding) -> None:
        scope = 0 if name in self._globals.get(self._scope, ()) else self._scope
        self.names.setdefault(name, []).append(_Binding(binding.kind, binding.value, binding.extra, scope))

    def lookup(self, name: str, scope: int) -> list[_Binding]:
        """The bindings a name has where it is used: its own scope's, else the enclosing functions', else the module's."""
        bindings = self.names.get(name, [])
        while True:
            found = [b for b in bindings if b.scope == scope]
            if found or scope == 0:
                return found
            scope = self.parent_scope.get(scope, 0)

    def bindings_of(self, node: ast.Name) -> list[_Binding]:
        return self.lookup(node.id, self.scope_of.get(id(node), 0))

    def _collect(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                self.imported.add(_canonical(a.name))
                if a.asname:
                    self.bind(a.asname, _Binding("module", a.name))
                else:
                    top = a.name.split(".")[0]
                    self.bind(top, _Binding("module", top))
        elif isinstance(node, ast.ImportFrom):
            if node.module and not node.level:
                self.imported.add(_canonical(node.module))
            for a in node.names:
                if a.name == "*":
                    if node.module and not node.level:
                        self.stars.append(node.module)
                elif node.level or not node.module:
                    self.bind(a.asname or a.name, _Binding("unknown"))
                else:
                    self.bind(a.asname or a.name, _Binding("module", f"{node.module}.{a.name}"))
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
            self.bind(node.name, _Binding("unknown"))
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            self.bind(node.name, _Binding("unknown"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.bind(node.name, _Binding("def", node))
            self.functions.setdefault(node.name, []).append(node)
            self.defined.add(node.name)
        elif isinstance(node, ast.Global):
            self._globals.setdefault(self._scope, set()).update(node.names)
        elif isinstance(node, ast.ClassDef):
            self.bind(node.name, _Binding("def", node))
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
            self.bind(target.id, _Binding("expr", value))
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
            self.bind(target.id, _Binding("iter", iterable))
            return
        if (isinstance(target, ast.Tuple) and len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts)
                and isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute)
                and iterable.func.attr == "items" and not iterable.args):
            # for k, v in D.items(): keys and values of D, looked up when resolved
            self.bind(target.elts[0].id, _Binding("items", iterable.func.value, 0))
            self.bind(target.elts[1].id, _Binding("items", iterable.func.value, 1))
            return
        self._unknown(target)

    def _unknown(self, target: ast.expr) -> None:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                self.bind(n.id, _Binding("unknown"))
            elif isinstance(n, ast.Attribute):
                self.defined.add(n.attr)

    def _params(self, func: ast.AST, args: ast.arguments) -> None:
        positional = args.posonlyargs + args.args
        for i, a in enumerate(positional):
            self.bind(a.arg, _Binding("param", func, i))
        for a in args.kwonlyargs:
            self.bind(a.arg, _Binding("param", func, a.arg))
        for a in (args.vararg, args.kwarg):
            if a is not None:
                self.bind(a.arg, _Binding("unknown"))


def _class_body_targets(item: ast.stmt) -> Iterator[str]:
    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield item.name
    elif isinstance(item, ast.Assign):
        for t in item.targets:
            yield from (n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
        yield item.target.id


# ---- resolution: names to dotted paths -----------------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _canonical(path: str) -> str:
    """``path`` with every step that lands on a module renamed to that module: ``torch.sys.modules`` -> ``sys.modules``.

    Only allowed modules (and builtins) are imported to walk them: they are trusted,
    and every other module is flagged at its import anyway. Steps are looked up
    statically, so no descriptor or module ``__getattr__`` of the walked code runs.
    """
    parts = path.split(".")
    root = parts[0]
    if root == "builtins":
        obj: Any = builtins
    elif root in ALLOWED_MODULES:
        try:
            obj = importlib.import_module(root)
        except Exception:  # not installed here: judged by its spelling
            return path
    else:
        return path
    prefix = root
    for i, part in enumerate(parts[1:], 1):
        nxt = inspect.getattr_static(obj, part, _MISSING)
        if nxt is _MISSING and isinstance(obj, types.ModuleType):
            nxt = sys.modules.get(f"{obj.__name__}.{part}", _MISSING)
        if nxt is _MISSING:
            return ".".join([prefix, *parts[i:]])
        prefix = nxt.__name__ if isinstance(nxt, types.ModuleType) else f"{prefix}.{part}"
        obj = nxt
    return prefix


_MISSING: Final = object()


class _Resolver:
    def __init__(self, facts: _Facts) -> None:
        self.facts = facts
        self._busy: set[Any] = set()

    def _guarded(self, key: Any, compute, empty):
        if key in self._busy:
            return empty
        self._busy.add(key)
        try:
            return compute()
        finally:
            self._busy.discard(key)

    # -- paths --

    def paths(self, node: ast.AST) -> frozenset[str]:
        """Every dotted path ``node`` may evaluate to (a module, or an attribute of one)."""
        return self._guarded(("paths", id(node)), lambda: self._paths(node), frozenset())

    def _paths(self, node: ast.AST) -> frozenset[str]:
        if isinstance(node, ast.Name):
            return self.name_paths(node.id, self.facts.scope_of.get(id(node), 0))
        if isinstance(node, ast.Attribute):
            found = {_canonical(f"{p}.{node.attr}") for p in self.paths(node.value)}
            if isinstance(node.value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
                for value in self.facts.attrs.get(node.attr, []):
                    found |= self.paths(value)
            return frozenset(found)
        if isinstance(node, ast.Call):
            return self._call_paths(node)
        if isinstance(node, ast.Subscript):
            return self._subscript_paths(node)
        if isinstance(node, ast.NamedExpr):
            return self.paths(node.value)
        if isinstance(node, ast.IfExp):
            return self.paths(node.body) | self.paths(node.orelse)
        if isinstance(node, ast.BoolOp):
            return frozenset().union(*(self.paths(v) for v in node.values))
        return frozenset()

    def name_paths(self, name: str, scope: int = 0) -> frozenset[str]:
        return self._guarded(("name", name, scope), lambda: self._name_paths(name, scope), frozenset())

    def _name_paths(self, name: str, scope: int) -> frozenset[str]:
        bindings = self.facts.lookup(name, scope)
        if not bindings:
            for module in self.facts.stars:
                path = _canonical(f"{module}.{name}")
                if path != f"{module}.{name}" or _exists(path):
                    return frozenset({path})
            return frozenset({f"builtins.{name}"}) if hasattr(builtins, name) else frozenset()
        found: set[str] = set()
        for b in bindings:
            if b.kind == "module":
                found.add(_canonical(b.value))
            elif b.kind == "expr":
                found |= self.paths(b.value)
            elif b.kind in ("iter", "items"):
                for element in self.elements(b) or ():
                    found |= self.paths(element)
            elif b.kind == "param":
                for arg in self.arguments(b.value, b.extra) or ():
                    found |= self.paths(arg)
        return frozenset(found)

    def _call_paths(self, node: ast.Call) -> frozenset[str]:
        func_paths = self.paths(node.func)
        found: set[str] = set()
        if "builtins.getattr" in func_paths and len(node.args) >= 2:
            for name in self.strings(node.args[1]) or ():
                found |= {_canonical(f"{p}.{name}") for p in self.paths(node.args[0])}
        if "builtins.__import__" in func_paths and node.args:
            fromlist = len(node.args) >= 4 or any(k.arg == "fromlist" for k in node.keywords)
            for name in self.strings(node.args[0]) or ():
                found.add(_canonical(name if fromlist else name.split(".")[0]))
        if "importlib.import_module" in func_paths and node.args:
            found |= {_canonical(name) for name in self.strings(node.args[0]) or () if not name.startswith(".")}
        if "builtins.type" in func_paths and len(node.args) == 1 and self.is_torch_tensor(node.args[0]):
            found.add("torch.Tensor")
        if isinstance(node.func, ast.Call) and "operator.attrgetter" in self.paths(node.func.func) and node.args:
            for spelled in self.strings(node.func.args[0]) if node.func.args else ():
                found |= {_canonical(f"{p}.{spelled}") for p in self.paths(node.args[0])}
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("__getattribute__", "__getattr__") \
                and node.args:
            receiver_paths = self.paths(node.func.value)
            target, name_arg = (node.args[0], node.args[1]) if (
                receiver_paths & {"builtins.object", "builtins.type"} and len(node.args) >= 2) else (
                node.func.value, node.args[0])
            for name in self.strings(name_arg) or ():
                found |= {_canonical(f"{p}.{name}") for p in self.paths(target)}
        if isinstance(node.func, ast.Name):
            for b in self.facts.bindings_of(node.func):
                if b.kind == "def" and isinstance(b.value, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for ret in ast.walk(b.value):
                        if isinstance(ret, ast.Return) and ret.value is not None:
                            found |= self.paths(ret.value)
                elif b.kind == "expr" and isinstance(b.value, ast.Lambda):
                    found |= self.paths(b.value.body)
        return frozenset(found)

    def _subscript_paths(self, node: ast.Subscript) -> frozenset[str]:
        keys = self.strings(node.slice) or frozenset()
        found: set[str] = set()
        value = node.value
        if "sys.modules" in self.paths(value):
            found |= {_canonical(k) for k in keys}
        if isinstance(value, ast.Call) and "builtins.vars" in self.paths(value.func) and value.args:
            found |= {_canonical(f"{p}.{k}") for p in self.paths(value.args[0]) for k in keys}
        if isinstance(value, ast.Attribute) and value.attr == "__dict__":
            found |= {_canonical(f"{p}.{k}") for p in self.paths(value.value) for k in keys}
        if isinstance(value, ast.Call) and self.paths(value.func) & {"builtins.globals", "builtins.vars"} \
                and not value.args:
            for k in keys:
                found |= self.name_paths(k, 0)
        return frozenset(found)

    # -- call sites: what a parameter may be --

    def arguments(self, func: ast.AST, param: int | str) -> list[ast.expr] | None:
        """Every expression passed for ``param`` of ``func`` (defaults too), or None if some call is unknown."""
        return self._guarded(("args", id(func), param), lambda: self._arguments(func, param), None)

    def _arguments(self, func: ast.AST, param: int | str) -> list[ast.expr] | None:
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        args = func.args
        positional = args.posonlyargs + args.args
        name = param if isinstance(param, str) else positional[param].arg
        found: list[ast.expr] = []
        if isinstance(param, int):
            defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
        else:
            defaults = {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
        if name in defaults:
            found.append(defaults[name])
        method = id(func) in self.facts.methods
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list)
        if ("." + func.name if method else func.name) in self.facts.escaped:
            return None
        calls = self.facts.calls.get("." + func.name, []) if method else self.facts.calls.get(func.name, [])
        if method and func.name.startswith("__") or (not calls and name not in defaults):
            return None
        offset = 1 if method and not static else 0
        for call in calls:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return None
            keyword = next((k.value for k in call.keywords if k.arg == name), None)
            index = param - offset if isinstance(param, int) else -1
            if keyword is not None:
                found.append(keyword)
            elif 0 <= index < len(call.args):
                found.append(call.args[index])
            elif name not in defaults:
                return None
        return found

    # -- strings --

    def strings(self, node: ast.AST) -> frozenset[str] | None:
        """Every string ``node`` may evaluate to, folded from literals; None if any is computed at run time."""
        result = self._guarded(("strings", id(node)), lambda: self._strings(node), None)
        return result if result is None or len(result) <= _MAX_STRINGS else None

    def _strings(self, node: ast.AST) -> frozenset[str] | None:
        if isinstance(node, ast.Constant):
            return frozenset({node.value}) if isinstance(node.value, str) else None
        if isinstance(node, ast.JoinedStr):
            parts = [self.strings(v.value) if isinstance(v, ast.FormattedValue) and v.format_spec is None
                     else self.strings(v) for v in node.values]
            return _product(parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return _product([self.strings(node.left), self.strings(node.right)])
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and isinstance(node.right, ast.Constant) \
                and isinstance(node.right.value, int) and 0 <= node.right.value <= 8:
            left = self.strings(node.left)
            return None if left is None else frozenset(s * node.right.value for s in left)
        if isinstance(node, ast.Subscript):
            base = self.strings(node.value)
            index = _constant_slice(node.slice)
            if base is None or index is None:
                return None
            try:
                return frozenset(s[index] for s in base)
            except (IndexError, TypeError):
                return None
        if isinstance(node, ast.IfExp):
            return _union([self.strings(node.body), self.strings(node.orelse)])
        if isinstance(node, ast.Call):
            return self._call_strings(node)
        if isinstance(node, ast.Name):
            bindings = self.facts.bindings_of(node)
            if not bindings:
                return None
            options: list[frozenset[str] | None] = []
            for b in bindings:
                if b.kind == "expr":
                    options.append(self.strings(b.value))
                elif b.kind in ("iter", "items"):
                    elements = self.elements(b)
                    options.append(None if elements is None else _union([self.strings(e) for e in elements]))
                elif b.kind == "param":
                    passed = self.arguments(b.value, b.extra)
                    options.append(None if passed is None else _union([self.strings(a) for a in passed]))
                else:
                    return None
            return _union(options)
        return None

    def elements(self, binding: _Binding) -> list[ast.expr] | None:
        """What a loop variable takes: the elements of a literal sequence, or a literal dict's keys or values."""
        if binding.kind == "items":
            source = self._literal(binding.value, ast.Dict)
            if source is None or any(k is None for k in source.keys):
                return None
            return list(source.keys if binding.extra == 0 else source.values)
        source = self._literal(binding.value, (ast.List, ast.Tuple, ast.Set))
        if source is not None:
            return list(source.elts)
        if isinstance(binding.value, ast.Constant) and isinstance(binding.value.value, str):
            return [ast.Constant(c) for c in binding.value.value]
        return None

    def _literal(self, node: ast.expr, kind: Any) -> Any:
        """``node`` itself if it is a literal of ``kind``, or the literal a name is bound to once."""
        if isinstance(node, kind):
            return node
        if isinstance(node, ast.Name):
            bindings = self.facts.bindings_of(node)
            if len(bindings) == 1 and bindings[0].kind == "expr" and isinstance(bindings[0].value, kind):
                return bindings[0].value
        return None

    def _call_strings(self, node: ast.Call) -> frozenset[str] | None:
        func = node.func
        if isinstance(func, ast.Attribute):
            base = self.strings(func.value)
            if func.attr == "join" and base is not None and len(node.args) == 1:
                arg = node.args[0]
                arg = self._literal(arg, (ast.List, ast.Tuple)) or arg
                if isinstance(arg, (ast.List, ast.Tuple)):
                    pieces = [self.strings(e) for e in arg.elts]
                    if any(p is None for p in pieces):
                        return None
                    joined = {sep.join(combo) for sep in base for combo in itertools.product(*pieces)}
                    return frozenset(joined) if len(joined) <= _MAX_STRINGS else None
                if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "reversed" \
                        and arg.args:
                    inner = self.strings(arg.args[0])
                    return None if inner is None else frozenset(sep.join(reversed(s)) for sep in base for s in inner)
                return None
            simple = {"lower", "upper", "strip", "lstrip", "rstrip", "title", "capitalize", "casefold", "swapcase"}
            if func.attr in simple and base is not None and not node.args:
                return frozenset(getattr(s, func.attr)() for s in base)
            if func.attr == "replace" and base is not None and len(node.args) == 2:
                old, new = self.strings(node.args[0]), self.strings(node.args[1])
                if old is None or new is None:
                    return None
                return frozenset(s.replace(o, n) for s in base for o in old for n in new)
            if func.attr == "decode" and isinstance(func.value, ast.Call):
                inner = func.value
                if isinstance(inner.func, ast.Attribute) and inner.func.attr == "fromhex" and inner.args:
                    hexes = self.strings(inner.args[0])
                    try:
                        return None if hexes is None else frozenset(bytes.fromhex(h).decode() for h in hexes)
                    except ValueError:
                        return None
                if isinstance(inner.func, ast.Name) and inner.func.id == "bytes" and inner.args and isinstance(
                        inner.args[0], (ast.List, ast.Tuple)) and all(
                        isinstance(e, ast.Constant) and isinstance(e.value, int) for e in inner.args[0].elts):
                    try:
                        return frozenset({bytes(e.value for e in inner.args[0].elts).decode()})
                    except (ValueError, UnicodeDecodeError):
                        return None
            return None
        if isinstance(func, ast.Name):
            if func.id == "str" and len(node.args) == 1:
                return self.strings(node.args[0])
            if func.id == "chr" and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                    and isinstance(node.args[0].value, int):
                try:
                    return frozenset({chr(node.args[0].value)})
                except (ValueError, OverflowError):
                    return None
        return None

    # -- torch tensors --

    def is_torch_tensor(self, node: ast.AST) -> bool:
        """Whether ``node`` certainly holds a torch tensor (``x.data``, torch factories, their methods)."""
        return self._guarded(("tensor", id(node)), lambda: self._is_torch_tensor(node), False)

    def _is_torch_tensor(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr == "data" or (node.attr in ("T", "mT", "H", "real", "imag")
                                           and self.is_torch_tensor(node.value))
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr not in _NOT_TENSOR_METHODS \
                    and self.is_torch_tensor(node.func.value):
                return True
            paths = self.paths(node.func)
            return bool(paths) and all(_is_torch_function(p) for p in paths)
        if isinstance(node, ast.BinOp):
            return self.is_torch_tensor(node.left) or self.is_torch_tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_torch_tensor(node.operand)
        if isinstance(node, ast.Subscript):
            return self.is_torch_tensor(node.value)
        if isinstance(node, ast.Name):
            # By the contract a parameter called ``data`` holds a torch tensor, as ``x.data`` does.
            bindings = self.facts.bindings_of(node)
            return bool(bindings) and all((b.kind == "expr" and self.is_torch_tensor(b.value))
                                          or (b.kind == "param" and node.id == "data") for b in bindings)
        return False


def _exists(path: str) -> bool:
    parts = path.split(".")
    module = sys.modules.get(parts[0])
    return module is not None and inspect.getattr_static(module, parts[1], _MISSING) is not _MISSING \
        if len(parts) == 2 else False


@functools.lru_cache(maxsize=1024)
def _is_torch_function(path: str) -> bool:
    parts = path.split(".")
    if len(parts) != 2 or parts[0] != "torch":
        return False
    torch = sys.modules.get("torch")
    obj = inspect.getattr_static(torch, parts[1], _MISSING) if torch is not None else _MISSING
    return obj is not _MISSING and callable(obj) and not isinstance(obj, (type, types.ModuleType))


def _product(parts: list[frozenset[str] | None]) -> frozenset[str] | None:
    if any(p is None for p in parts):
        return None
    size = 1
    for p in parts:
        size *= len(p)
    if size > _MAX_STRINGS:
        return None
    return frozenset("".join(combo) for combo in itertools.product(*parts))


def _union(options: Iterable[frozenset[str] | None]) -> frozenset[str] | None:
    found: set[str] = set()
    for option in options:
        if option is None:
            return None
        found |= option
    return frozenset(found)


def _constant_slice(node: ast.AST) -> int | slice | None:
    def value(n: ast.AST | None) -> int | None | bool:
        if n is None:
            return None
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub) and isinstance(n.operand, ast.Constant) \
                and isinstance(n.operand.value, int):
            return -n.operand.value
        return False

    if isinstance(node, ast.Slice):
        bounds = [value(node.lower), value(node.upper), value(node.step)]
        return None if any(b is False for b in bounds) else slice(*bounds)
    single = value(node)
    return None if single is False or single is None else single


# ---- the scan ---------------------------------------------------------------------------------------


def _literal_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


class _Scanner(ast.NodeVisitor):
    def __init__(self, facts: _Facts, found: _Found, depth: int, line: int | None) -> None:
        self.facts = facts
        self.found = found
        self.resolve = _Resolver(facts)
        self.depth = depth
        self.fixed_line = line
        """Set when scanning a string given to exec(): every finding is reported at the exec call."""
        self.functions: list[ast.AST] = []
        self.calls_judged: set[int] = set()
        """Callees whose name is judged with its call (``x.requires_grad_(False)`` is fine)."""

    def run(self, tree: ast.Module) -> None:
        if not self.facts.trusted_main:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and node.id == "__name__" and not isinstance(node.ctx, ast.Load):
                    self.review(node, WHY["main_name"])
        self.visit(tree)

    # -- recording --

    def line(self, node: ast.AST) -> int:
        return self.fixed_line if self.fixed_line is not None else getattr(node, "lineno", 0)

    def violation(self, node: ast.AST, what: str, path: str = "") -> None:
        self.found.violation(self.line(node), what, path)

    def review(self, node: ast.AST, why: str, construct: str | None = None) -> None:
        self.found.flag(self.line(node), construct or _construct(node), why)

    def judge_path(self, node: ast.AST, path: str, verb: str = "uses") -> bool:
        """Record the verdict on one resolved path; True if it was flagged."""
        verdict = classify(path)
        if verdict is None:
            return False
        kind, why = verdict
        if kind == "violation":
            self.violation(node, f"{verb} {path}: {why}", path)
        elif not self._said_at_import(path, why):
            self.review(node, why)
        return True

    def _said_at_import(self, path: str, why: str) -> bool:
        """A module flagged at its import is not flagged again at every use of it."""
        root = path.split(".")[0]
        return root in self.facts.imported and classify_module(root) == ("review", why)

    def judge_paths(self, node: ast.AST, paths: Iterable[str], verb: str = "uses") -> bool:
        flagged = False
        for path in sorted(paths):
            flagged |= self.judge_path(node, path, verb)
        return flagged

    # -- skipping what never runs at import --

    def generic_visit(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if id(child) not in self.facts.skipped:
                self.visit(child)

    # -- imports --

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            verdict = classify_module(_canonical(alias.name))
            if verdict is not None:
                kind, why = verdict
                if kind == "violation":
                    self.violation(node, f"imports {alias.name}: {why}")
                else:
                    self.review(node, why, f"import {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            self.review(node, WHY["relative"])
            return
        for alias in node.names:
            if alias.name == "*":
                path = _canonical(node.module)
                verdict = classify_module(path)
            else:
                path = _canonical(f"{node.module}.{alias.name}")
                verdict = classify(path)
            if verdict is not None:
                kind, why = verdict
                if kind == "violation":
                    self.violation(node, f"imports {path}: {why}")
                else:
                    self.review(node, why, f"from {node.module} import {alias.name}")

    # -- definitions --

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.visit_arguments(node.args)
        if node.returns is not None and not self.facts.future_annotations:
            self.visit(node.returns)
        self.functions.append(node)
        for stmt in node.body:
            if id(stmt) not in self.facts.skipped:
                self.visit(stmt)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_arguments(self, node: ast.arguments) -> None:
        for default in node.defaults + [d for d in node.kw_defaults if d is not None]:
            self.visit(default)
        if not self.facts.future_annotations:
            for a in node.posonlyargs + node.args + node.kwonlyargs + [node.vararg, node.kwarg]:
                if a is not None and a.annotation is not None:
                    self.visit(a.annotation)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit_arguments(node.args)
        self.functions.append(node)
        self.visit(node.body)
        self.functions.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if self.resolve.paths(base) & {"torch.Tensor", "torch._C.TensorBase", "torch._C._TensorBase"}:
                self.review(base, WHY["subclass"], f"class {node.name}({_construct(base)})")
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._store(node.target, node.value)
        if node.value is not None:
            self.visit(node.value)
        if not self.facts.future_annotations:
            self.visit(node.annotation)
        self._visit_target(node.target)

    # -- stores --

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._store(target, node.value)
            self._visit_target(target)
        self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._store(node.target, node.value)
        self._visit_target(node.target)
        self.visit(node.value)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._store(target, None)
            self._visit_target(target)

    def _visit_target(self, target: ast.expr) -> None:
        if isinstance(target, ast.Attribute):
            self.visit(target.value)
        elif isinstance(target, ast.Subscript):
            self.visit(target.value)
            self.visit(target.slice)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for e in target.elts:
                self._visit_target(e)
        elif isinstance(target, ast.Starred):
            self._visit_target(target.value)

    def _store(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for e in target.elts:
                self._store(e, None)
            return
        if isinstance(target, ast.Attribute):
            self._store_attribute(target, target.value, target.attr, value)

    def _store_attribute(self, node: ast.AST, receiver: ast.expr, attr: str, value: ast.expr | None) -> None:
        modules = self.resolve.paths(receiver)
        if modules:
            self.review(node, WHY["patch"])
        if attr == "requires_grad" and self.resolve.is_torch_tensor(receiver) and not _literal_false(value):
            self.violation(node, "sets requires_grad on a torch tensor: torch's autograd")
        if attr == "__class__":
            self.review(node, WHY["class_change"])
        if attr in DUNDER_WALKS and attr != "__dict__":
            self.review(node, WHY["dunder"])

    # -- loads --

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        if node.id in ("__builtins__", "__loader__", "__spec__", "__import__", "__build_class__"):
            self.review(node, WHY["builtins"] if node.id == "__builtins__" else WHY["import"])
            return
        paths = self.resolve.paths(node)
        dangerous = [p for p in paths if p.startswith("builtins.") and dangerous_builtin(p.split(".", 1)[1])]
        if dangerous:
            self.review(node, WHY[dangerous_builtin(dangerous[0].split(".", 1)[1]) or "getattr"],
                        f"{node.id} (used as a value)")
        bindings = self.facts.bindings_of(node)
        if bindings and all(b.kind == "module" for b in bindings):
            return  # an imported name: judged at its import
        self.judge_paths(node, [p for p in paths if not p.startswith("builtins.")])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.visit(node.value)
            return
        paths = self.resolve.paths(node)
        if paths:
            self.judge_paths(node, paths)
            self._visit_below_chain(node.value)
            self._name_checks(node, node.value, node.attr, resolved=True)
            return
        self._name_checks(node, node.value, node.attr, resolved=False)
        self.visit(node.value)

    def _visit_below_chain(self, node: ast.expr) -> None:
        """Visit what a resolved chain is built on (calls, subscripts), not its resolved prefixes again."""
        while isinstance(node, ast.Attribute):
            node = node.value
        if not isinstance(node, ast.Name):
            self.visit(node)

    def _name_checks(self, node: ast.AST, receiver: ast.expr, attr: str, resolved: bool) -> None:
        """Attribute names that are suspicious whatever the object: dunder walks, frames, torch's autograd."""
        if attr in DUNDER_WALKS and not (attr == "__dict__" and isinstance(receiver, ast.Name)
                                         and receiver.id in ("self", "cls")):
            self.review(node, WHY["dunder"])
        elif attr in FRAME_ATTRIBUTES:
            self.review(node, WHY["frames"])
        if resolved:
            return
        tensor = self.resolve.is_torch_tensor(receiver)
        if tensor and attr in ("grad_fn", "_grad_fn", "next_functions"):
            self.violation(node, f"reads .{attr} of a torch tensor: torch's autograd")
        elif tensor and attr == "grad":
            self.review(node, WHY["torch_grad"])
        elif attr in AUTOGRAD_ATTRIBUTES and attr not in self.facts.defined and id(node) not in self.calls_judged:
            self.review(node, WHY["unresolved"])

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            paths = self.resolve.paths(node)
            if paths:
                self.judge_paths(node, paths)
        self.generic_visit(node)

    # -- calls --

    def visit_Call(self, node: ast.Call) -> None:
        func_paths = self.resolve.paths(node.func)
        builtin = {p.split(".", 1)[1] for p in func_paths if p.startswith("builtins.")}
        if builtin & {"getattr", "setattr", "delattr"} and len(node.args) >= 2:
            self._dynamic_attribute(node, sorted(builtin & {"getattr", "setattr", "delattr"})[0])
        if builtin & {"exec", "eval", "compile"}:
            self.review(node, WHY["code"])
            self._scan_code(node)
        if "__import__" in builtin or "importlib.import_module" in func_paths:
            self.review(node, WHY["import"])
            for name in (self.resolve.strings(node.args[0]) if node.args else None) or ():
                self._judge_import(node, name)
        if builtin & {"globals", "vars"} and not (
                "vars" in builtin and node.args and isinstance(node.args[0], ast.Name)
                and node.args[0].id in ("self", "cls")):
            self.review(node, WHY["namespace"])
        if "open" in builtin:
            paths = (self.resolve.strings(node.args[0]) if node.args else None) or frozenset({""})
            proc = any(p.startswith(("/proc", "/dev", "/sys")) or not p for p in paths)
            self.review(node, WHY["proc"] if proc else WHY["open"])
        if "breakpoint" in builtin:
            self.review(node, WHY["debugger"])
        if func_paths & {"operator.attrgetter", "operator.methodcaller"}:
            self._attrgetter(node)
        self._tensor_calls(node, func_paths)
        if not builtin & {"getattr", "__import__"} and not self._local_function(node.func):
            # What a call returns (operator.attrgetter(...)(m), import_module(...)) is judged here;
            # getattr and __import__ above, name by name; the file's own functions where they look.
            self.judge_paths(node, self.resolve.paths(node))
        self._visit_func(node.func, bool(builtin))
        for arg in node.args:
            self.visit(arg)
        for k in node.keywords:
            self.visit(k.value)

    def _local_function(self, func: ast.expr) -> bool:
        bindings = self.facts.bindings_of(func) if isinstance(func, ast.Name) else []
        return bool(bindings) and all(b.kind == "def" or (b.kind == "expr" and isinstance(b.value, ast.Lambda))
                                      for b in bindings)

    def _visit_func(self, func: ast.expr, builtin: bool) -> None:
        if isinstance(func, ast.Name):
            self.judge_paths(func, [p for p in self.resolve.paths(func) if not p.startswith("builtins.")])
        else:
            self.visit(func)

    def _dynamic_attribute(self, node: ast.Call, which: str) -> None:
        receiver, name_arg = node.args[0], node.args[1]
        names = self.resolve.strings(name_arg)
        if names is None:
            if not self._own_object(receiver, name_arg):
                self.review(node, WHY["getattr"])
            return
        value = node.args[2] if which == "setattr" and len(node.args) >= 3 else None
        for name in sorted(names):
            if which == "getattr":
                paths = {_canonical(f"{p}.{name}") for p in self.resolve.paths(receiver)}
                if paths:
                    self.judge_paths(node, paths)
                else:
                    self._name_checks(node, receiver, name, resolved=False)
            else:
                self._store_attribute(node, receiver, name, value)

    def _own_object(self, receiver: ast.expr, name_arg: ast.expr) -> bool:
        """A computed name on the file's own objects, or delegation inside ``__getattr__``: nothing new is reached."""
        own = receiver
        if isinstance(own, ast.Call) and isinstance(own.func, ast.Name) and own.func.id == "type" and own.args:
            own = own.args[0]
        if isinstance(own, ast.Name) and (own.id in ("self", "cls") or own.id in self.facts.classes):
            return True
        current = self.functions[-1] if self.functions else None
        return (isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef))
                and current.name in ("__getattr__", "__getattribute__") and isinstance(name_arg, ast.Name)
                and name_arg.id in [a.arg for a in current.args.args[1:2]])

    def _attrgetter(self, node: ast.Call) -> None:
        spelled = [self.resolve.strings(a) for a in node.args[:1]] if node.args else [None]
        if spelled[0] is None:
            self.review(node, WHY["getattr"])
            return
        for dotted in spelled[0]:
            for attr in dotted.split("."):
                if attr in DUNDER_WALKS or attr in FRAME_ATTRIBUTES or (
                        attr in AUTOGRAD_ATTRIBUTES and attr not in self.facts.defined):
                    self.review(node, WHY["unresolved"] if attr in AUTOGRAD_ATTRIBUTES else WHY["dunder"])

    def _judge_import(self, node: ast.AST, name: str) -> None:
        verdict = classify_module(_canonical(name))
        if verdict is not None:
            kind, why = verdict
            if kind == "violation":
                self.violation(node, f"imports {name}: {why}", _canonical(name))
            else:
                self.review(node, why)

    def _tensor_calls(self, node: ast.Call, func_paths: frozenset[str]) -> None:
        """Switching torch's recording on for torch tensors: proof whatever the object's name."""
        receiver, methods = self._method_of(node.func)
        if methods == {"requires_grad_"}:
            self.calls_judged.add(id(node.func))
        receiver_is_tensor = receiver is not None and self.resolve.is_torch_tensor(receiver)
        first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "requires_grad"), None)
        for method in sorted(methods):
            if method == "requires_grad_" and not _literal_false(first) and (
                    receiver_is_tensor or "requires_grad_" not in self.facts.defined):
                self.violation(node, "calls requires_grad_() on a torch tensor: torch's autograd")
            elif method == "backward" and receiver_is_tensor:
                self.violation(node, "calls torch's .backward() on a torch tensor: torch's autograd")
            elif method in ("retain_grad", "register_hook", "register_post_accumulate_grad_hook") \
                    and receiver_is_tensor:
                self.violation(node, f"calls .{method}() on a torch tensor: torch's autograd")
        if receiver_is_tensor or any(p.startswith("torch.") for p in func_paths):
            for k in node.keywords:
                if k.arg == "requires_grad" and not _literal_false(k.value):
                    name = sorted(func_paths)[0] if func_paths else "a torch tensor method"
                    self.violation(node, f"creates a torch tensor with requires_grad=True ({name}): torch's autograd")

    def _method_of(self, func: ast.expr) -> tuple[ast.expr | None, frozenset[str]]:
        """The receiver and method name(s) of a call: ``x.m(...)``, or ``getattr(x, "m")(...)`` with a folded name."""
        if isinstance(func, ast.Attribute):
            return func.value, frozenset({func.attr})
        if isinstance(func, ast.Call) and len(func.args) >= 2 and "builtins.getattr" in self.resolve.paths(func.func):
            return func.args[0], self.resolve.strings(func.args[1]) or frozenset()
        return None, frozenset()

    def _scan_code(self, node: ast.Call) -> None:
        """A string handed to exec/eval/compile is code: scan it too, reporting at the call's line."""
        if not node.args or self.depth >= _MAX_EXEC_DEPTH:
            return
        for code in self.resolve.strings(node.args[0]) or ():
            try:
                tree = ast.parse(code)
            except (SyntaxError, ValueError):
                continue
            _scan_tree(tree, self.found, self.depth + 1, self.line(node))

