"""The static scan's visitor: every node of the live code judged against the allowlist.

``scan_tree`` resolves the names of one tree (``Facts``, ``Resolver``) and walks it, recording
violations and review entries in a ``Found``; strings handed to ``exec``/``eval`` are scanned
as code, reported at the call's line.
"""

from __future__ import annotations

import ast
from typing import Final, Iterable

from harness.integrity.allowlist import (AUTOGRAD_ATTRIBUTES, DUNDER_WALKS, FRAME_ATTRIBUTES, WHY, classify,
                                         classify_module, dangerous_builtin)
from harness.integrity.canonical import canonical
from harness.integrity.facts import Facts
from harness.integrity.patterns import pattern_reads
from harness.integrity.findings import Found
from harness.integrity.resolver import Resolver

__all__ = ["scan_tree"]

_MAX_EXEC_DEPTH: Final = 3
_CONSTRUCT_CHARS: Final = 80


def scan_tree(tree: ast.Module, found: Found, depth: int, line: int | None, outer: Facts | None = None) -> None:
    facts = Facts(tree, outer)
    _Scanner(facts, found, depth, line).run(tree)


def _construct(node: ast.AST) -> str:
    try:
        text = " ".join(ast.unparse(node).split())
    except Exception:  # a node unparse cannot render is still flagged, by its kind
        text = type(node).__name__
    return text if len(text) <= _CONSTRUCT_CHARS else text[:_CONSTRUCT_CHARS - 3] + "..."


def _binding(node: ast.AST) -> str | None:
    """A binding node as a person reads it: ``import pi as __name__``, ``def __name__``, ``case __name__``."""
    if isinstance(node, ast.alias):
        return f"import {node.name} as {node.asname}" if node.asname else f"import {node.name}"
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return f"def {node.name}"
    if isinstance(node, ast.ClassDef):
        return f"class {node.name}"
    if isinstance(node, ast.arg):
        return f"argument {node.arg}"
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return f"case {node.name}"
    if isinstance(node, ast.ExceptHandler):
        return f"except ... as {node.name}"
    return None


# ---- the scan ---------------------------------------------------------------------------------------


def _literal_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


class _Scanner(ast.NodeVisitor):
    def __init__(self, facts: Facts, found: Found, depth: int, line: int | None) -> None:
        self.facts = facts
        self.found = found
        self.resolve = Resolver(facts)
        self.depth = depth
        self.fixed_line = line
        """Set when scanning a string given to exec(): every finding is reported at the exec call."""
        self.functions: list[ast.AST] = []
        self.calls_judged: set[int] = set()
        """Callees whose name is judged with its call (``x.requires_grad_(False)`` is fine)."""
        self.pattern_reads: list[ast.expr] = []  # a match pattern's reads, alive: the resolver caches by node id

    def run(self, tree: ast.Module) -> None:
        for node in self.facts.name_bindings:  # any binding form: the self-test block is scanned, and a person reads why
            self.review(node, WHY["main_name"], _binding(node))
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
        if why == WHY["grader"]:
            # Importing the grader's code is proof, said once at the import; reaching it another way
            # (sys.modules, a module attribute) is proof too, said where it happens.
            if path.split(".")[0] not in self.facts.imported:
                self.violation(node, f"{verb} {path}: {why}", path)
        elif kind == "violation":
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
            verdict = classify_module(canonical(alias.name))
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
                path = canonical(node.module)
                verdict = classify_module(path)
            else:
                path = canonical(f"{node.module}.{alias.name}")
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
        if isinstance(target, ast.Name) and target.id == "__match_args__" and value is not None:
            # A class pattern's positional parts read the attributes this names, on whatever it matches.
            for item in ast.walk(value):
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    self._name_checks(item, target, item.value, resolved=False)
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

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, complex):
            self.review(node, WHY["complex"])

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, ast.Load):
            paths = self.resolve.paths(node)
            if paths:
                self.judge_paths(node, paths)
        self.generic_visit(node)

    # -- match statements --

    def visit_Match(self, node: ast.Match) -> None:
        # A pattern reads attributes and items with no attribute or subscript in the source
        # (``case object(_C=c)``): each read is judged as if written out, at the pattern's line.
        self.generic_visit(node)
        for read in pattern_reads(node):
            self.pattern_reads.append(read)
            paths = self.resolve.paths(read)
            if paths:
                self.judge_paths(read, paths)
            if isinstance(read, ast.Attribute):
                self._name_checks(read, read.value, read.attr, resolved=bool(paths))

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
        if builtin & {"globals", "vars", "locals"} and not (
                "vars" in builtin and node.args and isinstance(node.args[0], ast.Name)
                and node.args[0].id in ("self", "cls")):
            self.review(node, WHY["namespace"])
        if "open" in builtin:
            starts = _leading_text(node.args[0], self.resolve) if node.args else frozenset()
            proc = any(p.startswith(("/proc", "/dev", "/sys")) for p in starts)
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
                paths = {canonical(f"{p}.{name}") for p in self.resolve.paths(receiver)}
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
        verdict = classify_module(canonical(name))
        if verdict is not None:
            kind, why = verdict
            if kind == "violation":
                self.violation(node, f"imports {name}: {why}", canonical(name))
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
                asks = (k.arg == "requires_grad" and not _literal_false(k.value)) or (
                    k.arg is None and self._unpacks_requires_grad(k.value))
                if asks:
                    name = sorted(func_paths)[0] if func_paths else "a torch tensor method"
                    self.violation(node, f"creates a torch tensor with requires_grad=True ({name}): torch's autograd")

    def _unpacks_requires_grad(self, value: ast.expr, depth: int = 0) -> bool:
        """``**{"requires_grad": True}``, ``**dict(requires_grad=True)``, or a name bound only to one of them."""
        if isinstance(value, ast.Dict):
            return any(key is not None and "requires_grad" in (self.resolve.strings(key) or ()) and not _literal_false(v)
                       for key, v in zip(value.keys, value.values))
        if isinstance(value, ast.Call) and "builtins.dict" in self.resolve.paths(value.func):
            return any(k.arg == "requires_grad" and not _literal_false(k.value) for k in value.keywords)
        if isinstance(value, ast.Name) and depth < 3:
            return any(b.kind == "expr" and self._unpacks_requires_grad(b.value, depth + 1)
                       for b in self.facts.bindings_of(value))
        return False

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
            scan_tree(tree, self.found, self.depth + 1, self.line(node), self.facts)


def _leading_text(node: ast.AST, resolve: Resolver) -> frozenset[str]:
    """What a string surely starts with, even when the rest is computed (``f"/proc/{pid}/mem"``)."""
    whole = resolve.strings(node)
    if whole is not None:
        return whole
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return frozenset({str(node.values[0].value)})
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _leading_text(node.left, resolve)
    return frozenset()
