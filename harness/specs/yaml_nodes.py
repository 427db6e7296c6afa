"""Reading YAML with positions: nodes composed (not loaded) so every error names ``file:line:column``,
and the typed readers (string, number, mapping, nested lists) that raise ``SpecError``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Sequence

import yaml

from harness.errors import closest
from harness.specs.expressions import ExprError
from harness.specs.format import SpecError


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
        if "'\\t'" in problem or "tab" in problem:
            raise SpecError(src.path, line, column, _tab(src.line(line - 1), column)) from None
        raise SpecError(src.path, line, column, f"invalid YAML: {problem}{context}") from None
    except yaml.YAMLError as exc:
        raise SpecError(src.path, 1, 1, f"invalid YAML: {exc}") from None


def _tab(text: str, column: int) -> str:
    """What a tab where YAML refuses one means, in plain words."""
    if not text[: column - 1].strip(" \t"):
        return "this line is indented with a tab: YAML indents with spaces only (replace the tab with spaces)"
    return "a tab where YAML allows only spaces (a tab may only stand inside quotes): use spaces here"


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


def key_errors(
    src: _Source, node: yaml.Node, entries: Entries, what: str, allowed: Sequence[str], required: Sequence[str] = ()
) -> list[SpecError]:
    """Every unknown key (with the key it was probably meant to be) and every missing required key."""
    errors, meant = [], set()
    for name, (key, _) in entries.items():
        if name not in allowed:
            typo = closest(name, [a for a in allowed if a not in entries])
            meant.add(typo)
            hint = f" (did you mean {typo}?)" if typo else ""
            errors.append(src.error(key, f"unknown key {name!r} in {what}{hint}; allowed: {', '.join(allowed)}"))
    for name in required:
        if name not in entries and name not in meant:  # a misspelt key is not reported twice
            errors.append(src.error(node, f"{what} is missing the required key {name!r}"))
    return errors


def _check_keys(
    src: _Source, node: yaml.Node, entries: Entries, what: str, allowed: Sequence[str], required: Sequence[str] = ()
) -> None:
    errors = key_errors(src, node, entries, what, allowed, required)
    if errors:
        raise errors[0]


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
