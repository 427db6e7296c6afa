"""Resolution for the static scan: what every expression of the live code may be.

``Resolver`` turns expressions into the dotted paths they may evaluate to (``T.autograd``
after ``import torch as T`` is ``torch.autograd``), into the strings they may spell
(``"auto" + "grad"``), and tells which certainly hold a torch tensor, from the ``Facts``
of the file.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import itertools
import sys
import types
from typing import Any, Final, Iterable

from harness.integrity.canonical import canonical
from harness.integrity.facts import Binding, Facts

__all__ = ["Resolver", "TooIntricate"]

_MAX_STEPS: Final = 200_000
"""Resolutions a file may need; a file written to need more is refused (the scan runs in the grader)."""
_MAX_STRINGS: Final = 64
"""Above this many possible values a folded string counts as computed."""
_NOT_TENSOR_METHODS: Final = frozenset({"item", "tolist", "size", "dim", "numel", "numpy", "is_floating_point",
                                        "data_ptr", "element_size", "stride", "storage_offset", "is_contiguous",
                                        "equal", "allclose", "__len__", "__repr__", "__str__", "__bool__"})


_MISSING: Final = object()


class TooIntricate(RecursionError):
    """A file whose names take more resolving than any engine needs (or nest deeper than Python's stack)."""


class Resolver:
    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._busy: set[Any] = set()
        self._memo: dict[Any, Any] = {}
        self._steps = 0

    def _guarded(self, key: Any, compute, empty):
        """``compute()`` once per key: a cycle answers ``empty``, and a file that needs too much work is refused."""
        if key in self._memo:
            return self._memo[key]
        if key in self._busy:
            return empty
        self._steps += 1
        if self._steps > _MAX_STEPS:
            raise TooIntricate()
        self._busy.add(key)
        try:
            result = compute()
        finally:
            self._busy.discard(key)
        self._memo[key] = result
        return result

    # -- paths --

    def paths(self, node: ast.AST) -> frozenset[str]:
        """Every dotted path ``node`` may evaluate to (a module, or an attribute of one)."""
        return self._guarded(("paths", id(node)), lambda: self._paths(node), frozenset())

    def _paths(self, node: ast.AST) -> frozenset[str]:
        if isinstance(node, ast.Name):
            return self.name_paths(node.id, self.facts.scope_of.get(id(node), 0))
        if isinstance(node, ast.Attribute):
            found = {canonical(f"{p}.{node.attr}") for p in self.paths(node.value)}
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
                path = canonical(f"{module}.{name}")
                if path != f"{module}.{name}" or _exists(path):
                    return frozenset({path})
            return frozenset({f"builtins.{name}"}) if hasattr(builtins, name) else frozenset()
        found: set[str] = set()
        for b in bindings:
            if b.kind == "module":
                found.add(canonical(b.value))
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
                found |= {canonical(f"{p}.{name}") for p in self.paths(node.args[0])}
        if "builtins.__import__" in func_paths and node.args:
            fromlist = len(node.args) >= 4 or any(k.arg == "fromlist" for k in node.keywords)
            for name in self.strings(node.args[0]) or ():
                found.add(canonical(name if fromlist else name.split(".")[0]))
        if "importlib.import_module" in func_paths and node.args:
            found |= {canonical(name) for name in self.strings(node.args[0]) or () if not name.startswith(".")}
        if "builtins.type" in func_paths and len(node.args) == 1 and self.is_torch_tensor(node.args[0]):
            found.add("torch.Tensor")
        if isinstance(node.func, ast.Call) and "operator.attrgetter" in self.paths(node.func.func) and node.args:
            for spelled in self.strings(node.func.args[0]) if node.func.args else ():
                found |= {canonical(f"{p}.{spelled}") for p in self.paths(node.args[0])}
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("__getattribute__", "__getattr__") \
                and node.args:
            receiver_paths = self.paths(node.func.value)
            target, name_arg = (node.args[0], node.args[1]) if (
                receiver_paths & {"builtins.object", "builtins.type"} and len(node.args) >= 2) else (
                node.func.value, node.args[0])
            for name in self.strings(name_arg) or ():
                found |= {canonical(f"{p}.{name}") for p in self.paths(target)}
        if isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
            found |= self._lookup_paths(node.func.value, self.strings(node.args[0]) or frozenset())
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
        return self._lookup_paths(node.value, self.strings(node.slice) or frozenset())

    def _lookup_paths(self, value: ast.expr, keys: frozenset[str]) -> frozenset[str]:
        """``value[key]`` or ``value.get(key)`` for the namespaces that name modules: sys.modules, vars(), __dict__."""
        found: set[str] = set()
        if "sys.modules" in self.paths(value):
            found |= {canonical(k) for k in keys}
        if isinstance(value, ast.Call) and "builtins.vars" in self.paths(value.func) and value.args:
            found |= {canonical(f"{p}.{k}") for p in self.paths(value.args[0]) for k in keys}
        if isinstance(value, ast.Attribute) and value.attr == "__dict__":
            found |= {canonical(f"{p}.{k}") for p in self.paths(value.value) for k in keys}
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

    def elements(self, binding: Binding) -> list[ast.expr] | None:
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
