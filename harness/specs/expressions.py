"""Spec expressions: candidate-style code compiled to program steps, never passed to eval().

An expression such as ``(x @ W).relu().sum()`` is parsed with :mod:`ast` and
matched against *patterns* derived from each op's ``syntax`` in the op table
(``"{0} @ {1}"`` becomes "a ``@`` between two operands", ``"{0}.reshape({shape})"``
"a method ``reshape`` with one parameter"). Anything that is not such a pattern,
a name in scope or a number literal is rejected, so an expression can only ever
describe a graph of ops from the table.

Errors carry a character offset into the expression text so the spec loader
can point at the exact column in the YAML file.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Callable, Collection, Final, Mapping

from harness.errors import did_you_mean
from harness.lazy_modules import lazy_module
from harness.ops import OPS, OpSpec, checked_apply
from harness.program import Step
from harness.specs.format import MAX_ELEMENTS

torch = lazy_module("torch", globals())

__all__ = ["ExprError", "BuiltStep", "compile_expression", "operator_symbols", "method_names"]

Operand = str | int | float


class ExprError(ValueError):
    """An expression that is not valid; ``offset`` is a character index into its text."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@dataclass(frozen=True)
class BuiltStep:
    step: Step
    value: torch.Tensor | None
    """The step's result on the case's inputs (float64); None when not computed."""
    offset: int
    """Where the op's symbol or method name sits in the expression text."""
    source: str
    """The sub-expression this step came from, as written."""


# ---- patterns derived from the op table ------------------------------------------

_OPERAND: Final = re.compile(r"_operand(\d+)")
_PARAM: Final = re.compile(r"_param_(\w+)")


@dataclass(frozen=True)
class _Pattern:
    spec: OpSpec
    roles: tuple[str | int, ...]
    """What each positional place holds: an operand index or a parameter name."""
    keywords: tuple[str, ...]
    """Parameters written as keywords in the op's syntax."""
    symbol: str
    """The op's own token (``@``, ``**``, ``relu``), for pointing at it."""


def _role(node: ast.expr, syntax: str) -> str | int:
    if isinstance(node, ast.Name):
        if m := _OPERAND.fullmatch(node.id):
            return int(m.group(1))
        if m := _PARAM.fullmatch(node.id):
            return m.group(1)
    raise AssertionError(f"op syntax {syntax!r} has an argument that is neither an operand nor a parameter")


def _build_patterns() -> dict[tuple[Any, ...], _Pattern]:
    patterns: dict[tuple[Any, ...], _Pattern] = {}
    for spec in OPS.values():
        template = spec.syntax.format(
            *[f"_operand{i}" for i in range(len(spec.slots))], **{p: f"_param_{p}" for p in spec.params}
        )
        tree = ast.parse(template, mode="eval").body
        symbol = re.sub(r"\{\w*\}", "", spec.syntax).strip(" .()[]=")
        if isinstance(tree, ast.BinOp):
            key: tuple[Any, ...] = ("binop", type(tree.op))
            pattern = _Pattern(spec, (_role(tree.left, spec.syntax), _role(tree.right, spec.syntax)), (), symbol)
        elif isinstance(tree, ast.UnaryOp):
            key = ("unary", type(tree.op))
            pattern = _Pattern(spec, (_role(tree.operand, spec.syntax),), (), symbol)
        elif isinstance(tree, ast.Call) and isinstance(tree.func, ast.Attribute):
            key = ("method", tree.func.attr)
            roles = (_role(tree.func.value, spec.syntax), *(_role(a, spec.syntax) for a in tree.args))
            keywords = tuple(str(_role(k.value, spec.syntax)) for k in tree.keywords)
            pattern = _Pattern(spec, roles, keywords, tree.func.attr)
        elif isinstance(tree, ast.Attribute):
            key = ("attribute", tree.attr)
            pattern = _Pattern(spec, (_role(tree.value, spec.syntax),), (), tree.attr)
        elif isinstance(tree, ast.Subscript):
            key = ("subscript",)
            pattern = _Pattern(spec, (_role(tree.value, spec.syntax), _role(tree.slice, spec.syntax)), (), "[")
        else:
            raise AssertionError(f"op syntax {spec.syntax!r} is not a form spec expressions can parse")
        if pattern.roles[0] != 0:
            raise AssertionError(f"op syntax {spec.syntax!r} must start with its first operand")
        patterns[key] = pattern
    return patterns


_PATTERNS: Final = _build_patterns()


def operator_symbols() -> list[str]:
    symbols = [p.symbol for k, p in _PATTERNS.items() if k[0] in ("binop", "unary")]
    return list(dict.fromkeys(symbols))


def method_names() -> list[str]:
    return [k[1] for k in _PATTERNS if k[0] == "method"]


def _attribute_names() -> list[str]:
    return [k[1] for k in _PATTERNS if k[0] == "attribute"]


# Friendly names for Python constructs a spec expression may not use.
_FORBIDDEN: Final[dict[type, str]] = {
    ast.Lambda: "a lambda",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator expression",
    ast.JoinedStr: "an f-string",
    ast.Compare: "a comparison",
    ast.BoolOp: "and/or",
    ast.IfExp: "a conditional expression",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Starred: "* unpacking",
    ast.NamedExpr: "an assignment expression (:=)",
    ast.Slice: "a slice",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
}

_OPERATOR_TOKENS: Final[dict[type, str]] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.MatMult: "@", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^",
    ast.BitAnd: "&", ast.USub: "-", ast.UAdd: "+", ast.Not: "not", ast.Invert: "~",
}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---- the compiler ------------------------------------------------------------------


class _Compiler:
    def __init__(
        self,
        text: str,
        scope: Mapping[str, torch.Tensor | None],
        pending: Collection[str],
        fresh: Callable[[], str],
        compute: bool,
    ) -> None:
        self.text = text
        self.compute = compute
        self.scope = dict(scope)
        self.pending = pending
        self.fresh = fresh
        self.built: list[BuiltStep] = []
        # Offsets from ast are (line, UTF-8 byte column); errors need character offsets.
        self.line_starts = [0]
        for line in text.splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.lines = text.splitlines(keepends=True) or [""]

    # -- positions --

    def offset(self, lineno: int, col_bytes: int) -> int:
        line = self.lines[lineno - 1] if lineno - 1 < len(self.lines) else ""
        return self.line_starts[lineno - 1] + len(line.encode("utf-8")[:col_bytes].decode("utf-8", "replace"))

    def start(self, node: ast.AST) -> int:
        return self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> int:
        return self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def source(self, node: ast.AST) -> str:
        return " ".join(self.text[self.start(node) : self.end(node)].split())

    def fail(self, node: ast.AST, message: str, offset: int | None = None) -> ExprError:
        return ExprError(message, self.start(node) if offset is None else offset)

    # -- the whitelist, before anything is compiled --

    def whitelist(self, root: ast.expr) -> None:
        """Reject the first construct (in reading order) that no op-table expression can contain.

        Running this before compiling makes ``__import__('os').system('x')``
        fail on ``__import__`` rather than on the unknown method after it.
        """
        called = {id(n.func) for n in ast.walk(root) if isinstance(n, ast.Call)}
        problems: list[tuple[int, int, str]] = []
        for node in ast.walk(root):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                problems.append((self.start(node), 1, self.plain_call(node.func)))
            elif isinstance(node, ast.Call) and not isinstance(node.func, ast.Attribute):
                problems.append((self.start(node.func), 1, f"cannot call `{self.source(node.func)}`: only the op table's methods can be called"))
            elif isinstance(node, ast.Attribute):
                at = self.end(node) - len(node.attr)
                if id(node) in called and ("method", node.attr) not in _PATTERNS and ("attribute", node.attr) not in _PATTERNS:
                    problems.append((at, 0, self.unknown_method(node.attr)))
                elif id(node) not in called and ("attribute", node.attr) not in _PATTERNS and ("method", node.attr) not in _PATTERNS:
                    problems.append((at, 0, self.unknown_attribute(node.attr)))
            elif isinstance(node, ast.Constant) and not _is_number(node.value):
                problems.append((self.start(node), 0, self.literal(node)))
            elif isinstance(node, (ast.BinOp, ast.UnaryOp)) and (
                ("binop" if isinstance(node, ast.BinOp) else "unary", type(node.op)) not in _PATTERNS
            ):
                if not (isinstance(node.op, ast.USub) and isinstance(node, ast.UnaryOp)):
                    at = self.start(node)
                    if isinstance(node, ast.BinOp):
                        at = self.symbol_offset(node, _OPERATOR_TOKENS.get(type(node.op), ""))
                    problems.append((at, 0, self.unknown_operator(node.op)))
            elif type(node) in _FORBIDDEN and not isinstance(node, (ast.Tuple, ast.List, ast.Slice)):
                problems.append((self.start(node), 0, f"{_FORBIDDEN[type(node)]} is not allowed in a spec expression"))
        if problems:
            at, _, message = min(problems)
            raise ExprError(message, at)

    def plain_call(self, func: ast.Name) -> str:
        return (
            f"cannot call `{func.id}`: a spec expression may only call the op table's methods on a tensor, "
            "like `x.relu()`"
        )

    def unknown_method(self, attr: str) -> str:
        return f"unknown method {attr!r}{did_you_mean(attr, method_names())}; known methods: " \
               f"{', '.join(method_names())}"

    def unknown_attribute(self, attr: str) -> str:
        known = ", ".join(f".{a}" for a in _attribute_names())
        return f"unknown attribute {attr!r}{did_you_mean(attr, _attribute_names())}; the only attributes are " \
               f"{known} and the op table's methods"

    def literal(self, node: ast.Constant) -> str:
        kind = {str: "a string", bytes: "a bytes literal", bool: str(node.value), type(None): "None"}.get(
            type(node.value), f"the literal {node.value!r}"
        )
        return f"{kind} is not allowed in a spec expression; only names, numbers and ops"

    # -- nodes --

    def operand(self, node: ast.expr, name: str | None = None) -> Operand:
        """Compile ``node`` to a name in scope or a number; ``name`` names its top op."""
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.Constant):
            return self.number(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return -self.number(node.operand)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, name)
        if isinstance(node, ast.BinOp):
            return self.binop(node, name)
        if isinstance(node, ast.Call):
            return self.call(node, name)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, name)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, name)
        raise self.fail(node, f"{_FORBIDDEN.get(type(node), type(node).__name__)} is not allowed in a spec expression")

    def name(self, node: ast.Name) -> str:
        if node.id in self.scope:
            return node.id
        if node.id in self.pending:
            raise self.fail(node, f"{node.id!r} is used before it is defined (steps run in the order they are written)")
        names = [n for n in self.scope if not n.startswith("_")]
        raise self.fail(node, f"unknown name {node.id!r}{did_you_mean(node.id, names)}; defined so far: "
                              f"{', '.join(names) or 'none'}")

    def number(self, node: ast.Constant) -> int | float:
        if _is_number(node.value):
            return node.value
        raise self.fail(node, self.literal(node))

    def param(self, node: ast.expr, spec: OpSpec, param: str) -> Any:
        """A parameter: a number or a tuple of numbers, written literally."""
        if isinstance(node, ast.Constant) and _is_number(node.value):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            if _is_number(node.operand.value):
                return -node.operand.value
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.param(item, spec, param) for item in node.elts)
        raise self.fail(
            node, f"parameter {param!r} of {spec.name} must be a number or a tuple of numbers, not `{self.source(node)}`"
        )

    def unary(self, node: ast.UnaryOp, name: str | None) -> Operand:
        pattern = _PATTERNS.get(("unary", type(node.op)))
        if pattern is None:
            raise self.fail(node, self.unknown_operator(node.op))
        return self.apply(pattern, node, [node.operand], {}, name, self.start(node))

    def binop(self, node: ast.BinOp, name: str | None) -> Operand:
        pattern = _PATTERNS.get(("binop", type(node.op)))
        if pattern is None:
            raise self.fail(node, self.unknown_operator(node.op), self.symbol_offset(node, _OPERATOR_TOKENS.get(type(node.op), "")))
        return self.apply(pattern, node, [node.left, node.right], {}, name, self.symbol_offset(node, pattern.symbol))

    def symbol_offset(self, node: ast.BinOp, symbol: str) -> int:
        found = self.text.find(symbol, self.end(node.left), self.start(node.right)) if symbol else -1
        return found if found >= 0 else self.start(node)

    def unknown_operator(self, op: ast.AST) -> str:
        token = _OPERATOR_TOKENS.get(type(op), type(op).__name__)
        return f"operator {token} is not in the op table; known operators: {', '.join(operator_symbols())}"

    def call(self, node: ast.Call, name: str | None) -> Operand:
        func = node.func
        if isinstance(func, ast.Name):
            raise self.fail(node, self.plain_call(func))
        if not isinstance(func, ast.Attribute):
            raise self.fail(node, f"cannot call `{self.source(func)}`: only the op table's methods can be called")
        at = self.end(func) - len(func.attr)
        pattern = _PATTERNS.get(("method", func.attr))
        if pattern is None:
            if ("attribute", func.attr) in _PATTERNS:
                raise self.fail(node, f".{func.attr} is an attribute, not a method: write `x.{func.attr}`", at)
            raise self.fail(node, self.unknown_method(func.attr), at)
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.fail(arg, "* unpacking is not allowed in a spec expression")
        positional = pattern.roles[1:]
        label = f"{func.attr}()"
        if len(node.args) > len(positional):
            raise self.fail(node, f"{label} takes {_count(len(positional), 'positional argument')}, got {len(node.args)}", at)
        keywords: dict[str, ast.expr] = {}
        params = set(pattern.spec.params)
        for kw in node.keywords:
            if kw.arg is None:
                raise self.fail(kw.value, "** unpacking is not allowed in a spec expression")
            if kw.arg not in params:
                if not params:
                    raise self.fail(node, f"{label} takes no keyword arguments", at)
                allowed = ", ".join(pattern.spec.params)
                raise self.fail(node, f"{label} has no keyword argument {kw.arg!r}; its keywords: {allowed}", at)
            keywords[kw.arg] = kw.value
        return self.apply(pattern, node, [func.value, *node.args], keywords, name, at)

    def attribute(self, node: ast.Attribute, name: str | None) -> Operand:
        at = self.end(node) - len(node.attr)
        pattern = _PATTERNS.get(("attribute", node.attr))
        if pattern is None:
            if ("method", node.attr) in _PATTERNS:
                raise self.fail(node, f".{node.attr} is a method: call it, as in `x.{node.attr}()`", at)
            raise self.fail(node, self.unknown_attribute(node.attr), at)
        return self.apply(pattern, node, [node.value], {}, name, at)

    def subscript(self, node: ast.Subscript, name: str | None) -> Operand:
        pattern = _PATTERNS.get(("subscript",))
        at = self.text.find("[", self.end(node.value))
        at = at if at >= 0 else self.start(node)
        if pattern is None:
            raise self.fail(node, "indexing is not in the op table", at)
        if isinstance(node.slice, (ast.Slice, ast.Tuple)):
            raise self.fail(node.slice, f"{_FORBIDDEN[type(node.slice)]} is not allowed as an index; use an int64 input")
        return self.apply(pattern, node, [node.value, node.slice], {}, name, at)

    # -- one op application --

    def apply(
        self,
        pattern: _Pattern,
        node: ast.expr,
        positional: list[ast.expr],
        keywords: dict[str, ast.expr],
        name: str | None,
        at: int,
    ) -> str:
        spec = pattern.spec
        operands: dict[int, Operand] = {}
        params: dict[str, Any] = {}
        for role, arg in zip(pattern.roles, positional):
            if isinstance(role, int):
                operands[role] = self.operand(arg)
            else:
                params[role] = self.param(arg, spec, role)
        for param, arg in keywords.items():
            if param in params:
                raise self.fail(arg, f"{spec.name} got parameter {param!r} twice")
            params[param] = self.param(arg, spec, param)
        for role in pattern.roles:
            if isinstance(role, int) and role not in operands:
                raise self.fail(node, f"{spec.name} needs {len(spec.slots)} operand(s)", at)
        missing = [p for p in spec.params if p not in params and p not in spec.defaults]
        if missing:
            raise self.fail(node, f"{spec.name} needs parameter {missing[0]!r}", at)
        args = tuple(operands[i] for i in range(len(spec.slots)))
        source = self.source(node)
        value = None
        if self.compute:
            values = [self.scope[a] if isinstance(a, str) else a for a in args]
            elements = spec.result_elements(values)
            if elements > MAX_ELEMENTS:
                raise ExprError(f"`{source}` would hold {elements:,} elements; a spec tensor holds at most "
                                f"{MAX_ELEMENTS:,}", at)
            message, value = checked_apply(spec, values, params)
            if message is not None:
                raise ExprError(f"`{source}`: {message}", at)
        step = Step(name or self.fresh(), spec.name, args, tuple(params.items()))
        self.scope[step.name] = value
        self.built.append(BuiltStep(step, value, at, source))
        return step.name


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def compile_expression(
    text: str,
    scope: Mapping[str, torch.Tensor | None],
    *,
    fresh: Callable[[], str],
    name: str | None = None,
    pending: Collection[str] = (),
    compute: bool = True,
) -> tuple[Operand, list[BuiltStep]]:
    """Compile ``text`` into steps over the names in ``scope`` (their float64/int64 values).

    With ``compute=False`` only the form is checked: values may be None and
    no op's domain rule runs.

    ``name`` names the step of the outermost op (a named spec step); inner ops
    get names from ``fresh``. ``pending`` are names defined later, for a clear
    "used before it is defined" message. Returns the result (a name, or a number
    when the text holds no op) and the steps built, each already checked
    against its op's domain rule.
    """
    body = text.strip()
    lead = len(text) - len(text.lstrip())
    try:
        tree = ast.parse(body, mode="eval")
    except SyntaxError as exc:
        lines = body.splitlines() or [""]
        lineno = min(max(exc.lineno or 1, 1), len(lines))
        # Python gives no offset when the text ends too early ("x +"): point at its end.
        column = len(lines[lineno - 1]) if not exc.offset else min(exc.offset - 1, len(lines[lineno - 1]))
        offset = sum(len(line) + 1 for line in lines[: lineno - 1]) + column
        raise ExprError(f"invalid expression: {exc.msg}", lead + offset) from None
    compiler = _Compiler(body, scope, pending, fresh, compute)
    try:
        compiler.whitelist(tree.body)
        result = compiler.operand(tree.body, name)
    except ExprError as exc:
        raise ExprError(exc.message, exc.offset + lead) from None
    return result, [BuiltStep(b.step, b.value, b.offset + lead, b.source) for b in compiler.built]
