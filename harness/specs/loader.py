"""YAML spec cases: loading, validating and compiling them to programs.

A spec file holds one case (a mapping) or a list of cases; the format is
described in ``docs/specs.md``. Files are *composed* with PyYAML rather than
loaded, so every node keeps its position and every error names
``file:line:column``. Expressions are compiled by ``harness.specs.expressions`` against the
op table, never evaluated. A case is valid only when torch autograd (float64)
agrees with every number it states.
"""

from __future__ import annotations

import gc
import keyword
import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, Callable, Final, Iterable, Iterator, Sequence

import torch
import yaml

from harness.specs.expressions import BuiltStep, ExprError, compile_expression
from harness.compare import Tolerance, compare, tolerance_for
from harness.concepts import concepts
from harness.ops import LEVELS, OPS, needs_broadcasting
from harness.program import DTYPES, Leaf, Outcome, Program, ProgramError

__all__ = [
    "SpecCase",
    "Expectations",
    "SpecError",
    "ParsedCase",
    "ParsedFile",
    "load_cases",
    "check_paths",
    "check",
    "CheckResult",
    "spec_files",
    "parse_file",
    "case_ids",
    "split_lines",
    "DEFAULT_SPECS_DIR",
    "CONCEPTS",
    "INITS",
]

DEFAULT_SPECS_DIR: Final = Path(__file__).resolve().parents[2] / "specs"

CONCEPTS: Final = tuple(concepts())
"""The concepts a case may name: the registry ``grade explain`` prints."""
INITS: Final = ("randn", "uniform", "ints", "randint", "zeros", "ones", "arange")

CASE_KEYS: Final = (
    "id", "title", "level", "concepts", "hint", "inputs", "steps", "output", "upstream", "passes", "expect",
    "tolerance",
)  # fmt: skip
REQUIRED_CASE_KEYS: Final = ("id", "title", "level", "concepts", "inputs", "output")
INPUT_KEYS: Final = ("value", "shape", "init", "seed", "low", "high", "scale", "dtype", "requires_grad")
UPSTREAM_KEYS: Final = tuple(k for k in INPUT_KEYS if k != "requires_grad")
EXPECT_KEYS: Final = ("output", "grads")
TOLERANCE_KEYS: Final = ("rtol", "atol")

_ID: Final = re.compile(r"[a-z0-9_.-]+")
# Names the author picks; a leading underscore is kept for auto-named intermediates.
_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# Which init reads which bounds, and their defaults.
_BOUNDS: Final = {"uniform": (0.0, 1.0), "ints": (-3, 3), "randint": (None, None)}


class SpecError(ValueError):
    """A spec that is not valid, with the position (1-based) the problem starts at."""

    def __init__(self, path: str | Path, line: int, column: int, message: str) -> None:
        super().__init__(f"{path}:{line}:{column}: {message}")
        self.path = str(path)
        self.line = line
        self.column = column
        self.message = message

    def __str__(self) -> str:
        if not self.line:  # about a whole file or folder
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


@dataclass(frozen=True)
class Expectations:
    """The numbers a spec states explicitly; each was checked against torch when loading."""

    output: torch.Tensor | None = None
    """None when the spec does not state the output."""
    grads: dict[str, torch.Tensor | None] = field(default_factory=dict)
    """Stated leaf gradients; a None value means the gradient must stay None."""


@dataclass(frozen=True)
class SpecCase:
    id: str
    title: str
    level: str
    concepts: tuple[str, ...]
    hint: str | None
    program: Program
    expected: Outcome
    """What torch autograd computes for the program in float64: the oracle."""
    explicit: Expectations | None
    tolerance: Tolerance
    requirements: frozenset[str]
    source: Path
    line: int


# ---- YAML ----------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-5`` as a float (YAML 1.1 wants ``1.0e-5``)."""


# libyaml composes ~20x faster with the same marks; the pure-Python loader is
# kept for error messages, whose wording differs between the two.
_FastLoader: type = type("_FastLoader", (getattr(yaml, "CSafeLoader", _Loader),), {})
for _loader in {_Loader, _FastLoader}:
    _loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
        list("-+0123456789"),
    )
_CONSTRUCTOR: Final = yaml.constructor.SafeConstructor()
_SCALAR_TAGS: Final = {
    "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null",
}  # fmt: skip
_LINE_BREAK: Final = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")


def split_lines(text: str) -> list[str]:
    """Lines (with their line break) as YAML counts them, so marks index into this list."""
    lines, start = [], 0
    for m in _LINE_BREAK.finditer(text):
        lines.append(text[start : m.end()])
        start = m.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


@dataclass
class _Source:
    path: str
    text: str

    def __post_init__(self) -> None:
        self.lines = [_LINE_BREAK.sub("", line) for line in split_lines(self.text)]

    def error(self, node: yaml.Node | None, message: str) -> SpecError:
        if node is None:
            return SpecError(self.path, 1, 1, message)
        return SpecError(self.path, node.start_mark.line + 1, node.start_mark.column + 1, message)

    def expression_error(self, node: yaml.ScalarNode, exc: ExprError) -> SpecError:
        line, column = self.expression_position(node, exc.offset)
        return SpecError(self.path, line, column, exc.message)

    def expression_position(self, node: yaml.ScalarNode, offset: int) -> tuple[int, int]:
        """File position of character ``offset`` of a scalar's value, when the source shows it verbatim."""
        start, value = node.start_mark, str(node.value)
        style = node.style or None  # libyaml says "" for a plain scalar, PyYAML None
        if style in (None, "'", '"') and start.line == node.end_mark.line:
            column = start.column + (1 if style else 0)
            if self.line(start.line)[column : column + len(value)] == value:
                return start.line + 1, column + offset + 1
        if style == "|":
            before = value[:offset]
            index = before.count("\n")
            row = value.split("\n")[index]
            line = self.line(start.line + 1 + index)
            if row and line.endswith(row):
                return start.line + 2 + index, len(line) - len(row) + len(before) - before.rfind("\n")
        return start.line + 1, start.column + 1

    def line(self, index: int) -> str:
        return self.lines[index] if 0 <= index < len(self.lines) else ""


def _compose(src: _Source) -> yaml.Node | None:
    try:
        return yaml.compose(src.text, Loader=_FastLoader)
    except yaml.YAMLError:
        pass
    try:
        return yaml.compose(src.text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        context = ""
        if exc.context and exc.problem and exc.context_mark is not None:
            context = f" ({exc.context} at line {exc.context_mark.line + 1})"
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        raise SpecError(src.path, line, column, f"invalid YAML: {problem}{context}") from None
    except yaml.YAMLError as exc:
        raise SpecError(src.path, 1, 1, f"invalid YAML: {exc}") from None


# ---- typed reads of composed nodes --------------------------------------------------

Entries = dict[str, tuple[yaml.Node, yaml.Node]]


def _scalar(src: _Source, node: yaml.Node, what: str) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        kind = "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"
        raise src.error(node, f"{what} must be a single value, not {kind}")
    if node.tag not in _SCALAR_TAGS:
        raise src.error(node, f"{what} uses the unsupported YAML tag {node.tag}")
    return _CONSTRUCTOR.yaml_constructors[node.tag](_CONSTRUCTOR, node)


def _string(src: _Source, node: yaml.Node, what: str) -> str:
    value = _scalar(src, node, what)
    if not isinstance(value, str):
        raise src.error(node, f"{what} must be a string, got {_describe(value)}")
    return value


def _number(src: _Source, node: yaml.Node, what: str, *, integer: bool = False) -> int | float:
    value = _scalar(src, node, what)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise src.error(node, f"{what} must be {'an integer' if integer else 'a number'}, got {_describe(value)}")
    return value


def _bool(src: _Source, node: yaml.Node, what: str) -> bool:
    value = _scalar(src, node, what)
    if not isinstance(value, bool):
        raise src.error(node, f"{what} must be true or false, got {_describe(value)}")
    return value


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {value!r}"
    return repr(value)


def _mapping(src: _Source, node: yaml.Node, what: str) -> Entries:
    if not isinstance(node, yaml.MappingNode):
        kind = "a list" if isinstance(node, yaml.SequenceNode) else _describe(_scalar(src, node, what))
        raise src.error(node, f"{what} must be a mapping, got {kind}")
    entries: Entries = {}
    for key, value in node.value:
        name = _scalar(src, key, f"a key of {what}")
        if not isinstance(name, str):
            raise src.error(key, f"a key of {what} must be a name, got {_describe(name)}")
        if name in entries:
            first = entries[name][0].start_mark
            raise src.error(key, f"duplicate key {name!r} in {what} (first at line {first.line + 1})")
        entries[name] = (key, value)
    return entries


def _check_keys(
    src: _Source, node: yaml.Node, entries: Entries, what: str, allowed: Sequence[str], required: Sequence[str] = ()
) -> None:
    for name, (key, _) in entries.items():
        if name not in allowed:
            raise src.error(key, f"unknown key {name!r} in {what}; allowed: {', '.join(allowed)}")
    for name in required:
        if name not in entries:
            raise src.error(node, f"{what} is missing the required key {name!r}")


def _nested(src: _Source, node: yaml.Node, what: str, *, integer: bool) -> tuple[Any, tuple[int, ...]]:
    """A number or nested lists of numbers, with its shape; ragged lists are refused where they go wrong."""
    if isinstance(node, yaml.SequenceNode):
        items = [_nested(src, child, what, integer=integer) for child in node.value]
        if not items:
            raise src.error(node, f"{what} has an empty list; every dimension needs at least one element")
        shape = items[0][1]
        for child, (_, child_shape) in zip(node.value, items):
            if child_shape != shape:
                raise src.error(
                    child, f"{what} is ragged: this entry has shape {_fmt(child_shape)}, the first {_fmt(shape)}"
                )
        return [value for value, _ in items], (len(items), *shape)
    return _number(src, node, f"every element of {what}", integer=integer), ()


def _fmt(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


# ---- one case -------------------------------------------------------------------------


@dataclass
class ParsedCase:
    """One case as read from a file: its nodes (for tools that edit the file) and the result."""

    node: yaml.Node
    entries: Entries
    case: SpecCase | None
    errors: list[SpecError]
    id: str | None = None
    id_node: yaml.Node | None = None


class _CaseReader:
    def __init__(self, src: _Source, node: yaml.Node, check_expectations: bool) -> None:
        self.src = src
        self.node = node
        self.check_expectations = check_expectations
        self.errors: list[SpecError] = []
        self.entries: Entries = {}
        self.id: str | None = None
        self.id_node: yaml.Node | None = None
        self.counter = 0

    def attempt(self, read: Callable[..., Any], *args: Any) -> Any:
        """Run one independent read; record its error and carry on, so one pass reports them all."""
        try:
            return read(*args)
        except SpecError as exc:
            self.errors.append(exc)
            return None

    def read(self) -> ParsedCase:
        case = self.attempt(self._read)
        self.errors.sort(key=lambda e: (e.line, e.column))
        return ParsedCase(self.node, self.entries, case if not self.errors else None, self.errors, self.id, self.id_node)

    def value(self, key: str) -> yaml.Node | None:
        return self.entries[key][1] if key in self.entries else None

    def _read(self) -> SpecCase | None:
        src = self.src
        self.entries = _mapping(src, self.node, "a case")
        if "id" in self.entries:
            self.attempt(self._id)
        self.attempt(_check_keys, src, self.node, self.entries, "a case", CASE_KEYS, REQUIRED_CASE_KEYS)
        title = self.attempt(self._line, "title")
        level = self.attempt(self._choice, "level", LEVELS)
        concepts = self.attempt(self._concepts)
        hint = self.attempt(self._line, "hint") if "hint" in self.entries else None
        passes = self.attempt(self._passes)
        tolerance_node = self.value("tolerance")
        leaves = self.attempt(self._inputs)
        upstream = None
        if (node := self.value("upstream")) is not None:
            upstream = self.attempt(self._tensor_input, node, "upstream", UPSTREAM_KEYS)
        if self.errors or leaves is None:
            return None

        scope = {leaf.name: _float64(leaf.value) for leaf in leaves}
        built = self._steps(scope)
        output_node = self.entries["output"][1]
        output, output_steps = self._expression(output_node, "output", scope, name=None, pending=())
        built += output_steps
        if not isinstance(output, str) or output not in {b.step.name for b in built}:
            what = "a number" if not isinstance(output, str) else f"the input {output!r} itself"
            raise src.error(output_node, f"the output must apply at least one op, not just be {what}")
        out_value = scope[output]
        upstream_tensor = None if upstream is None else upstream[0]
        if upstream_tensor is None and out_value.numel() != 1:
            raise src.error(
                output_node,
                f"the output has shape {_fmt(out_value.shape)}: a non-scalar output needs `upstream` "
                "(the gradient passed to backward)",
            )
        if upstream_tensor is not None and tuple(upstream_tensor.shape) != tuple(out_value.shape):
            raise src.error(
                self.value("upstream"),
                f"upstream has shape {_fmt(upstream_tensor.shape)}, but the output has shape {_fmt(out_value.shape)}",
            )
        program = Program(tuple(leaves), tuple(b.step for b in built), output, upstream_tensor, passes or 1,
                          upstream_recipe=None if upstream is None else upstream[2])
        try:
            program.validate()
        except ProgramError as exc:  # the checks above should have caught it; keep the message anyway
            raise src.error(output_node, str(exc)) from None
        self._check_level(level, program, built, leaves)
        expected = self._run_torch(program, output_node)
        tolerance = self._tolerance(tolerance_node, program)
        explicit = None
        if self.check_expectations and (node := self.value("expect")) is not None:
            explicit = self._expectations(node, program, expected, tolerance)
        if self.errors:
            return None
        return SpecCase(
            id=self.id or "",
            title=title,
            level=level,
            concepts=tuple(concepts),
            hint=hint,
            program=program,
            expected=expected,
            explicit=explicit,
            tolerance=tolerance,
            requirements=frozenset(program.requirements()),
            source=Path(src.path),
            line=self.node.start_mark.line + 1,
        )

    # -- simple keys --

    def _id(self) -> None:
        key, node = self.entries["id"]
        value = _string(self.src, node, "id")
        if not _ID.fullmatch(value):
            raise self.src.error(node, f"id {value!r} may only use lowercase letters, digits, '_', '.' and '-'")
        self.id, self.id_node = value, node

    def _line(self, key: str) -> str | None:
        node = self.value(key)
        if node is None:
            return None
        value = _string(self.src, node, key)
        if not value.strip() or "\n" in value.strip():
            raise self.src.error(node, f"{key} must be one non-empty line")
        return value.strip()

    def _choice(self, key: str, choices: Sequence[str]) -> str | None:
        node = self.value(key)
        if node is None:
            return None
        value = _string(self.src, node, key)
        if value not in choices:
            raise self.src.error(node, f"unknown {key} {value!r}; one of: {', '.join(choices)}")
        return value

    def _concepts(self) -> list[str] | None:
        node = self.value("concepts")
        if node is None:
            return None
        if not isinstance(node, yaml.SequenceNode) or not node.value:
            raise self.src.error(node, f"concepts must be a non-empty list, of: {', '.join(CONCEPTS)}")
        concepts: list[str] = []
        for item in node.value:
            value = _string(self.src, item, "a concept")
            if value not in CONCEPTS:
                raise self.src.error(item, f"unknown concept {value!r}; one of: {', '.join(CONCEPTS)}")
            if value in concepts:
                raise self.src.error(item, f"concept {value!r} is listed twice")
            concepts.append(value)
        return concepts

    def _passes(self) -> int | None:
        node = self.value("passes")
        if node is None:
            return None
        value = _number(self.src, node, "passes", integer=True)
        if value not in (1, 2):
            raise self.src.error(node, f"passes must be 1 or 2, got {value}")
        return int(value)

    # -- inputs --

    def _inputs(self) -> list[Leaf] | None:
        node = self.value("inputs")
        if node is None:
            return None
        entries = _mapping(self.src, node, "inputs")
        if not entries:
            raise self.src.error(node, "inputs must name at least one input")
        leaves = []
        for name, (key, value) in entries.items():
            leaf = self.attempt(self._input, name, key, value)
            if leaf is not None:
                leaves.append(leaf)
        return leaves if len(leaves) == len(entries) else None

    def _name(self, name: str, key: yaml.Node, what: str) -> None:
        if not _NAME.fullmatch(name) or keyword.iskeyword(name):
            raise self.src.error(
                key, f"{what} name {name!r} must be a Python identifier starting with a letter (not a keyword)"
            )

    def _input(self, name: str, key: yaml.Node, node: yaml.Node) -> Leaf:
        self._name(name, key, "input")
        what = f"input {name!r}"
        tensor, entries, recipe = self._tensor_input(node, what, INPUT_KEYS)
        floating = tensor.is_floating_point()
        requires_grad = floating
        if "requires_grad" in entries:
            rg_node = entries["requires_grad"][1]
            requires_grad = _bool(self.src, rg_node, f"requires_grad of {what}")
            if requires_grad and not floating:
                raise self.src.error(rg_node, f"{what} is int64 and cannot require grad")
        return Leaf(name, tensor, requires_grad, recipe)

    def _tensor_input(self, node: yaml.Node, what: str,
                      allowed: Sequence[str]) -> tuple[torch.Tensor, Entries, str | None]:
        """A tensor written as ``value`` or as ``shape`` + ``init``, and for the latter the Python that rebuilds it."""
        src = self.src
        entries = _mapping(src, node, what)
        _check_keys(src, node, entries, what, allowed)
        dtype_name = "float64"
        if "dtype" in entries:
            dtype_name = _string(src, entries["dtype"][1], f"dtype of {what}")
            allowed_dtypes = list(DTYPES) if "requires_grad" in allowed else [d for d in DTYPES if d != "int64"]
            if dtype_name not in allowed_dtypes:
                known = "unknown dtype" if dtype_name not in DTYPES else f"{what} cannot have dtype"
                raise src.error(entries["dtype"][1], f"{known} {dtype_name!r}; one of: {', '.join(allowed_dtypes)}")
        if "value" in entries:
            for other in ("shape", "init", "seed", "low", "high", "scale"):
                if other in entries:
                    raise src.error(
                        entries[other][0], f"{what} has an explicit value, so {other!r} does not apply; remove one"
                    )
            integer = dtype_name == "int64"
            data, _ = _nested(src, entries["value"][1], f"the value of {what}", integer=integer)
            return torch.tensor(data, dtype=DTYPES[dtype_name]), entries, None
        if "shape" not in entries:
            raise src.error(node, f"{what} needs either `value` or `shape` (with an optional `init`)")
        shape = self._shape(entries["shape"][1], what)
        init_node = entries["init"][1] if "init" in entries else None
        init = "randn" if init_node is None else _string(src, init_node, f"init of {what}")
        if init not in INITS:
            raise src.error(init_node, f"unknown init {init!r}; one of: {', '.join(INITS)}")
        if init == "randint" and "dtype" not in entries:
            dtype_name = "int64"
        integer = dtype_name == "int64"
        if integer and init in ("randn", "uniform"):
            raise src.error(init_node or entries["dtype"][1], f"init {init} makes floats, but {what} is int64; use randint, ints or a value")
        if init == "randint" and not integer:
            raise src.error(init_node, "init randint makes int64 values; use init ints for whole-number floats")
        low, high = self._bounds(entries, init, what)
        seed = 0
        if "seed" in entries:
            seed = int(_number(src, entries["seed"][1], f"seed of {what}", integer=True))
        scale = None
        if "scale" in entries:
            scale = _number(src, entries["scale"][1], f"scale of {what}", integer=integer)
        value = _generate(init, shape, seed, low, high)
        recipe = _recipe(init, shape, seed, low, high)
        if scale is not None:
            value = value * scale
            recipe = f"({recipe} * {scale!r})"
        return value.to(DTYPES[dtype_name]), entries, f"{recipe}.to(torch.{dtype_name})"

    def _shape(self, node: yaml.Node, what: str) -> tuple[int, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.src.error(node, f"shape of {what} must be a list of sizes, like [2, 3] ([] for a scalar)")
        sizes = []
        for item in node.value:
            size = _number(self.src, item, f"a size in the shape of {what}", integer=True)
            if size < 1:
                raise self.src.error(item, f"sizes must be positive, got {size}")
            sizes.append(int(size))
        return tuple(sizes)

    def _bounds(self, entries: Entries, init: str, what: str) -> tuple[Any, Any]:
        low, high = _BOUNDS.get(init, (None, None))
        for bound in ("low", "high"):
            if bound not in entries:
                continue
            key, node = entries[bound]
            if init not in _BOUNDS or (init == "randint" and bound == "low"):
                users = "uniform or ints" if bound == "low" else "uniform, ints or randint"
                raise self.src.error(key, f"{bound!r} only applies to init {users}, not {init}")
            number = _number(self.src, node, f"{bound} of {what}", integer=init != "uniform")
            low, high = (number, high) if bound == "low" else (low, number)
        if init == "randint":
            if high is None:
                raise self.src.error(entries["init"][1], "init randint needs `high` (values lie in [0, high))")
            if high < 1:
                raise self.src.error(entries["high"][1], f"high of randint must be at least 1, got {high}")
        elif init in _BOUNDS and low > high or (init == "uniform" and low == high):
            node = entries["high"][1] if "high" in entries else entries["low"][1]
            raise self.src.error(node, f"{what}: low ({low}) must be below high ({high})")
        return low, high

    # -- steps and the output --

    def _expression(
        self, node: yaml.Node, what: str, scope: dict[str, torch.Tensor], name: str | None, pending: Sequence[str]
    ) -> tuple[Any, list[BuiltStep]]:
        text = _string(self.src, node, what)
        try:
            result, built = compile_expression(text, scope, fresh=self._fresh, name=name, pending=pending)
        except ExprError as exc:
            raise self.src.expression_error(node, exc) from None  # type: ignore[arg-type]
        for b in built:
            scope[b.step.name] = b.value
        return result, built

    def _fresh(self) -> str:
        self.counter += 1
        return f"_{self.counter}"

    def _steps(self, scope: dict[str, torch.Tensor]) -> list[BuiltStep]:
        node = self.value("steps")
        if node is None:
            return []
        entries = _mapping(self.src, node, "steps")
        names = list(entries)
        built: list[BuiltStep] = []
        for i, (name, (key, value)) in enumerate(entries.items()):
            self._name(name, key, "step")
            if name in scope:
                raise self.src.error(key, f"step {name!r} has the same name as an input")
            result, steps = self._expression(value, f"step {name!r}", scope, name, names[i + 1 :])
            if result != name:
                shown = result if isinstance(result, str) else repr(result)
                raise self.src.error(value, f"step {name!r} must apply at least one op, not just name `{shown}`")
            built += steps
        return built

    # -- whole-program checks --

    def _check_level(self, level: str, program: Program, built: list[BuiltStep], leaves: list[Leaf]) -> None:
        declared = LEVELS.index(level)
        needed = LEVELS.index(program.level())
        if needed <= declared:
            return
        scope = {leaf.name: _float64(leaf.value) for leaf in leaves} | {b.step.name: b.value for b in built}
        reasons: list[tuple[int, str]] = []
        for b in built:
            spec = OPS[b.step.op]
            if LEVELS.index(spec.level) > declared:
                reasons.append((LEVELS.index(spec.level), f"the op {spec.name} in `{b.source}` is {spec.level}"))
            operands = [scope[a] if isinstance(a, str) else a for a in b.step.args]
            if needs_broadcasting(spec, operands) and declared < 1:
                reasons.append((1, f"`{b.source}` broadcasts (a followups feature)"))
            if any(not isinstance(a, str) for a in b.step.args) and declared < 2:
                reasons.append((2, f"`{b.source}` has a Python number operand (an extensions feature)"))
        if program.upstream is not None and declared < 1:
            reasons.append((1, "an upstream gradient is a followups feature"))
        if program.passes > 1 and declared < 1:
            reasons.append((1, "two backward passes are a followups feature"))
        because = "; ".join(reason for _, reason in reasons) or f"it needs {', '.join(sorted(program.requirements()))}"
        raise self.src.error(
            self.value("level"), f"level {level} is too low for this case, which needs {LEVELS[needed]}: {because}"
        )

    def _run_torch(self, program: Program, output_node: yaml.Node) -> Outcome:
        try:
            expected = program.run_torch()
        except (RuntimeError, ValueError, TypeError, IndexError) as exc:
            raise self.src.error(output_node, f"torch cannot run this case: {str(exc).splitlines()[0]}") from None
        if not expected.requires_grad[program.output]:
            raise self.src.error(
                output_node, "the output does not require grad (no input it depends on does), so backward() cannot run"
            )
        if not bool(torch.isfinite(expected.values[program.output]).all()):
            raise self.src.error(output_node, "torch computes a non-finite output (inf or nan) for this case")
        for name, grad in expected.grads.items():
            if grad is not None and not bool(torch.isfinite(grad).all()):
                raise self.src.error(output_node, f"torch computes a non-finite gradient for {name!r}")
        return expected

    def _tolerance(self, node: yaml.Node | None, program: Program) -> Tolerance:
        # float32 inputs are compared at float32 precision; everything else at the project default.
        dtype = "float32" if any(leaf.value.dtype == torch.float32 for leaf in program.leaves) else "float64"
        default = tolerance_for(dtype, any(OPS[s.op].transcendental for s in program.steps))
        if node is None:
            return default
        entries = _mapping(self.src, node, "tolerance")
        _check_keys(self.src, node, entries, "tolerance", TOLERANCE_KEYS)
        values = {"rtol": default.rtol, "atol": default.atol}
        for name, (_, value) in entries.items():
            number = float(_number(self.src, value, name))
            if not math.isfinite(number) or number < 0:
                raise self.src.error(value, f"{name} must be a finite number >= 0, got {number}")
            values[name] = number
        return Tolerance(**values)

    # -- explicit expectations --

    def _expectations(
        self, node: yaml.Node, program: Program, expected: Outcome, tolerance: Tolerance
    ) -> Expectations | None:
        src = self.src
        entries = _mapping(src, node, "expect")
        _check_keys(src, node, entries, "expect", EXPECT_KEYS)
        output = None
        if "output" in entries:
            value_node = entries["output"][1]
            output = self.attempt(self._stated, value_node, "expect.output", False)
            if output is not None:
                self.attempt(
                    self._agree, value_node, "expect.output", output, expected.values[program.output], tolerance, None
                )
        grads: dict[str, torch.Tensor | None] = {}
        if "grads" in entries:
            leaves = {leaf.name: leaf for leaf in program.leaves}
            for name, (key, value_node) in _mapping(src, entries["grads"][1], "expect.grads").items():
                if name not in leaves:
                    raise src.error(key, f"expect.grads names {name!r}, which is not an input; inputs: {', '.join(leaves)}")
                what = f"expect.grads.{name}"
                stated = self.attempt(self._stated, value_node, what, True)
                if stated is not None or _is_null(value_node):
                    grads[name] = stated
                    self.attempt(self._agree, value_node, what, stated, expected.grads[name], tolerance, leaves[name])
        return Expectations(output, grads)

    def _stated(self, node: yaml.Node, what: str, nullable: bool) -> torch.Tensor | None:
        if _is_null(node):
            if nullable:
                return None
            raise self.src.error(node, f"{what} must be a number or nested lists of numbers, not null")
        data, _ = _nested(self.src, node, what, integer=False)
        return torch.tensor(data, dtype=torch.float64)

    def _agree(
        self,
        node: yaml.Node,
        what: str,
        stated: torch.Tensor | None,
        torch_value: torch.Tensor | None,
        tolerance: Tolerance,
        leaf: Leaf | None,
    ) -> None:
        mismatch = compare(stated, torch_value, tolerance, what)
        if mismatch is None:
            return
        if mismatch.kind == "not_none":
            why = "it does not require grad" if leaf is not None and not leaf.requires_grad else "the output does not depend on it"
            raise self.src.error(node, f"{what} states a value, but torch leaves this gradient None ({why}); write null")
        if mismatch.kind == "none":
            shape = _fmt(torch_value.shape)  # type: ignore[union-attr]
            raise self.src.error(node, f"{what} is null, but torch computes a gradient of shape {shape}")
        if mismatch.kind == "shape":
            raise self.src.error(
                node,
                f"{what} has shape {_fmt(stated.shape)}, but torch's result has shape {_fmt(torch_value.shape)}",  # type: ignore[union-attr]
            )
        index = mismatch.index or ()
        where = f"; worst element {list(index)}" if index else ""
        raise self.src.error(
            _element(node, index),
            f"{what} disagrees with torch autograd{where}: the spec says {mismatch.got:.10g}, "
            f"torch computes {mismatch.expected:.10g} ({tolerance.describe()})",
        )


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _element(node: yaml.Node, index: Sequence[int]) -> yaml.Node:
    """The node of one element of nested lists, to point at the worst one."""
    for i in index:
        if not isinstance(node, yaml.SequenceNode) or i >= len(node.value):
            break
        node = node.value[i]
    return node


def _float64(value: torch.Tensor) -> torch.Tensor:
    return value.to(torch.float64) if value.is_floating_point() else value


def _generate(init: str, shape: tuple[int, ...], seed: int, low: Any, high: Any) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if init == "randn":
        return torch.randn(shape, generator=generator, dtype=torch.float64)
    if init == "uniform":
        return torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low
    if init == "ints":
        return torch.randint(int(low), int(high) + 1, shape, generator=generator, dtype=torch.int64)
    if init == "randint":
        return torch.randint(0, int(high), shape, generator=generator, dtype=torch.int64)
    if init == "zeros":
        return torch.zeros(shape, dtype=torch.int64)
    if init == "ones":
        return torch.ones(shape, dtype=torch.int64)
    return torch.arange(math.prod(shape), dtype=torch.int64).reshape(shape)


def _recipe(init: str, shape: tuple[int, ...], seed: int, low: Any, high: Any) -> str:
    """Python that rebuilds ``_generate``'s tensor bit for bit (for snippets too large to spell out)."""
    generator = f"torch.Generator().manual_seed({seed})"
    size = repr(tuple(shape))
    if init == "randn":
        return f"torch.randn({size}, generator={generator}, dtype=torch.float64)"
    if init == "uniform":
        return f"(torch.rand({size}, generator={generator}, dtype=torch.float64) * ({high!r} - {low!r}) + {low!r})"
    if init == "ints":
        return f"torch.randint({int(low)}, {int(high) + 1}, {size}, generator={generator}, dtype=torch.int64)"
    if init == "randint":
        return f"torch.randint(0, {int(high)}, {size}, generator={generator}, dtype=torch.int64)"
    if init in ("zeros", "ones"):
        return f"torch.{init}({size}, dtype=torch.int64)"
    return f"torch.arange({math.prod(shape)}, dtype=torch.int64).reshape({size})"


# ---- files ---------------------------------------------------------------------------


@dataclass
class ParsedFile:
    path: Path
    text: str
    root: yaml.Node | None
    cases: list[ParsedCase]
    errors: list[SpecError]
    """File-level errors (bad YAML, a root that is not a case or a list of cases)."""

    def all_errors(self) -> list[SpecError]:
        return self.errors + [e for c in self.cases for e in c.errors]


@contextmanager
def _loading() -> Iterator[None]:
    """Settings for validating many tiny cases at once; both are restored afterwards.

    Torch runs single-threaded: spec tensors have a handful of elements, and handing
    each op to a thread pool costs tens of milliseconds per op when the cores are busy.
    The cyclic garbage collector pauses: the YAML nodes of a file live while it is
    read, and enough of them survive a young collection to start a full one, which
    scans every object torch's import made (~0.2 s). They are freed by reference
    counting once the cases are built; any cycles are collected after the pause.
    """
    threads = torch.get_num_threads()
    collecting = gc.isenabled()
    if threads != 1:
        torch.set_num_threads(1)
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        if threads != 1:
            torch.set_num_threads(threads)


def parse_file(path: str | Path, text: str | None = None, *, check_expectations: bool = True) -> ParsedFile:
    """Read and validate every case of one spec file; errors are collected, never raised."""
    with _loading():
        return _parse_file(Path(path), text, check_expectations)


def _parse_file(path: Path, text: str | None, check_expectations: bool) -> ParsedFile:
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return ParsedFile(path, "", None, [], [SpecError(path, 1, 1, f"cannot read the file: {exc}")])
    src = _Source(str(path), text)
    try:
        root = _compose(src)
    except SpecError as exc:
        return ParsedFile(path, text, None, [], [exc])
    if root is None:
        return ParsedFile(path, text, None, [], [src.error(None, "the file is empty; expected a case or a list of cases")])
    if isinstance(root, yaml.SequenceNode):
        nodes = list(root.value)
        if not nodes:
            return ParsedFile(path, text, root, [], [src.error(root, "the list of cases is empty")])
    elif isinstance(root, yaml.MappingNode):
        nodes = [root]
    else:
        return ParsedFile(path, text, root, [], [src.error(root, "a spec file holds a case (a mapping) or a list of cases")])
    cases = [_CaseReader(src, node, check_expectations).read() for node in nodes]
    return ParsedFile(path, text, root, cases, [])


def case_ids(path: str | Path, text: str | None = None) -> list[tuple[str, SpecError]]:
    """The ids a spec file declares, each with its position; a quick read that validates nothing else."""
    try:
        text = Path(path).read_text(encoding="utf-8") if text is None else text
        root = _compose(_Source(str(path), text))
    except (OSError, UnicodeDecodeError, SpecError):
        return []
    nodes = root.value if isinstance(root, yaml.SequenceNode) else [root] if root is not None else []
    found = []
    for node in nodes:
        if not isinstance(node, yaml.MappingNode):
            continue
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "id" and isinstance(value, yaml.ScalarNode):
                mark = value.start_mark
                found.append((str(value.value), SpecError(path, mark.line + 1, mark.column + 1, "")))
    return found


def spec_files(paths: Iterable[str | Path]) -> list[Path]:
    """The spec files under ``paths``: files as given, folders searched for ``**/*.yaml`` in sorted order."""
    found: list[Path] = []
    for path in map(Path, paths):
        found += sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    return list(dict.fromkeys(found))


@dataclass
class CheckResult:
    files: list[Path]
    parsed: list[ParsedFile]
    cases: list[SpecCase]
    errors: list[SpecError]

    @property
    def case_count(self) -> int:
        return sum(len(p.cases) for p in self.parsed)


def check(paths: Iterable[str | Path]) -> CheckResult:
    """Validate every case under ``paths``, including that ids are unique across all of them.

    A folder without any spec file is an error: grading with it would silently grade nothing.
    """
    paths = list(paths)
    files = spec_files(paths)
    with _loading():
        parsed = [parse_file(path) for path in files]
    seen: dict[str, SpecError] = {}
    errors: list[SpecError] = [SpecError(path, 0, 0, "no spec files (*.yaml) in this folder")
                               for path in map(Path, paths) if path.is_dir() and not any(path.rglob("*.yaml"))]
    cases: list[SpecCase] = []
    for file in parsed:
        errors += file.errors
        for entry in file.cases:
            errors += entry.errors
            duplicate = False
            if entry.id is not None and entry.id_node is not None:
                mark = entry.id_node.start_mark
                here = SpecError(file.path, mark.line + 1, mark.column + 1, "")
                first = seen.setdefault(entry.id, here)
                if first is not here:
                    duplicate = True
                    where = f"{first.path}:{first.line}:{first.column}"
                    errors.append(
                        SpecError(here.path, here.line, here.column, f"duplicate id {entry.id!r} (first defined at {where})")
                    )
            if entry.case is not None and not duplicate:
                cases.append(entry.case)
    return CheckResult(files, parsed, cases, errors)


def check_paths(paths: Iterable[str | Path]) -> tuple[list[SpecCase], list[SpecError]]:
    """Every valid case and every error (one or more per invalid case) under ``paths``."""
    # The pause ends after the statement that drops the parsed files and their YAML
    # nodes, so the collection that follows has only the cases left to scan.
    with _loading():
        cases, errors = attrgetter("cases", "errors")(check(paths))
    return cases, errors


_LOADED: dict[tuple[Any, ...], tuple[SpecCase, ...]] = {}
"""The last valid load, keyed by the paths and every spec file's bytes: a batch or ``--watch``
grades many times in one process, and parsing the library (computing torch's outcome for each
case) costs more than some grades."""


def _load_key(paths: Sequence[Path]) -> tuple[Any, ...] | None:
    try:
        contents = tuple((str(f), f.read_bytes()) for f in spec_files(paths))
    except OSError:
        return None  # parsed (and reported) afresh
    return tuple(str(p) for p in paths), contents


def load_cases(paths: Iterable[str | Path] = (DEFAULT_SPECS_DIR,)) -> list[SpecCase]:
    """Every case under ``paths``; raises the first SpecError if any case is invalid.

    Unchanged files are parsed once per process; the cases are immutable, so grades share them.
    """
    paths = [Path(p) for p in paths]
    key = _load_key(paths)
    cached = _LOADED.get(key) if key is not None else None
    if cached is not None:
        return list(cached)
    cases, errors = check_paths(paths)
    if errors:
        raise errors[0]
    if key is not None:
        _LOADED.clear()  # one library at a time: a --watch session of an edited spec keeps no stale copies
        _LOADED[key] = tuple(cases)
    return cases
