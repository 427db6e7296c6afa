"""Writing spec YAML as text: computed ``expect`` blocks, new cases, and splicing into files.

Spec files are edited by replacing or inserting lines found through the
composed nodes' marks, never by dumping a loaded document, so an author's
comments, quoting and key order survive ``grade spec fill``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Collection, Final, Sequence

import yaml

from harness.lazy_modules import lazy_module
from harness.specs import ParsedFile, SpecCase, SpecError, split_lines

torch = lazy_module("torch", globals())

__all__ = ["MARKER", "format_number", "expect_lines", "fill", "FillResult", "quote", "states_everything"]

MARKER: Final = "# expect: computed by torch autograd (float64); refresh with `grade spec fill FILE`"
_MARKER_PREFIX: Final = "# expect: computed by torch"
# Lines longer than this are broken up: nested lists into block items, long rows across lines.
WIDTH: Final = 100
# Ten significant digits are exact to 5e-10 relative, far inside every tolerance,
# and still short enough to read.
DIGITS: Final = 10


def format_number(value: float) -> str:
    """A float YAML 1.1 also reads as a float: always a '.' in the mantissa (``1.0e-05``, ``3.0``)."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = f"{value:.{DIGITS}g}"
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + (f"e{exponent}" if exponent else "")


def quote(text: str) -> str:
    """A double-quoted YAML scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def _flow(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return format_number(float(value))


def _value_lines(prefix: str, value: Any, indent: int) -> list[str]:
    """``prefix`` followed by ``value``; long values become block items indented under ``indent``."""
    flow = _flow(value)
    if not isinstance(value, list) or len(prefix) + len(flow) <= WIDTH:
        return [prefix + flow]
    if not any(isinstance(v, list) for v in value):
        # One long row: a flow list may continue on more-indented lines.
        lines, current = [], prefix + "["
        for i, v in enumerate(value):
            item = format_number(float(v)) + ("," if i < len(value) - 1 else "]")
            if len(current) + len(item) + 1 > WIDTH and not current.endswith("["):
                lines.append(current.rstrip())
                current = " " * (indent + 2)
            current += item + " "
        return lines + [current.rstrip()]
    lines = [prefix.rstrip()]
    for item in value:
        lines += _value_lines(" " * (indent + 2) + "- ", item, indent + 4)
    return lines


def _tensor_value(t: torch.Tensor) -> Any:
    return t.detach().to(torch.float64).tolist()


def expect_lines(case: SpecCase, indent: int) -> list[str]:
    """The marker comment and the computed ``expect`` block of ``case``, at ``indent`` spaces."""
    pad = " " * indent
    program, expected = case.program, case.expected
    lines = [pad + MARKER, pad + "expect:"]
    lines += _value_lines(f"{pad}  output: ", _tensor_value(expected.values[program.output]), indent + 2)
    grads = [leaf for leaf in program.leaves if not leaf.raw]
    if grads:
        lines.append(f"{pad}  grads:")
        for leaf in grads:
            grad = expected.grads.get(leaf.name)
            prefix = f"{pad}    {leaf.name}: "
            if grad is None:
                lines.append(prefix + "null")
            else:
                lines += _value_lines(prefix, _tensor_value(grad), indent + 4)
    return lines


def states_everything(case: SpecCase) -> bool:
    """True when the case's own expect block gives the output and every float input's gradient."""
    explicit = case.explicit
    if explicit is None or explicit.output is None:
        return False
    return all(leaf.name in explicit.grads for leaf in case.program.leaves if not leaf.raw)


# ---- splicing into a file -------------------------------------------------------------


@dataclass
class FillResult:
    text: str
    added: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[SpecError] = field(default_factory=list)
    by_hand: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    """(case id, old lines, new lines) for each refreshed block that an author wrote (no fill marker)."""


def _last_line(node: yaml.Node, lines: Sequence[str]) -> int:
    """Index of the last line holding ``node``'s content (block collections end at the next token)."""
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        return _last_line(last[1] if isinstance(node, yaml.MappingNode) else last, lines)
    start, end = node.start_mark, node.end_mark
    line = end.line
    if end.column == 0 and line > start.line:
        line -= 1
    # Block scalars end after their trailing blank lines.
    while line > start.line and not lines[line].strip():
        line -= 1
    return line


def fill(parsed: ParsedFile, keep: Collection[int] = ()) -> FillResult:
    """``parsed``'s text with every valid case's ``expect`` block added or recomputed.

    ``parsed`` must come from ``parse_file(..., check_expectations=False)`` so
    that cases whose stated numbers are stale still compile. The blocks of the
    cases at indices ``keep`` (already complete and right) stay as written.
    """
    result = FillResult(parsed.text, errors=list(parsed.errors))
    lines = split_lines(parsed.text)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += newline
    edits: list[tuple[int, int, list[str]]] = []  # replace lines[start:end] with the new ones
    for index, entry in enumerate(parsed.cases):
        if entry.case is None:
            result.errors += entry.errors
            continue
        node = entry.node
        if node.flow_style:
            mark = node.start_mark
            result.errors.append(
                SpecError(parsed.path, mark.line + 1, mark.column + 1, "cannot fill a flow-style case {...}; write it in block style")
            )
            continue
        indent = node.value[0][0].start_mark.column
        block = expect_lines(entry.case, indent)
        if "expect" in entry.entries and index in keep:
            result.unchanged.append(entry.case.id)
        elif "expect" in entry.entries:
            key, value = entry.entries["expect"]
            start, end = key.start_mark.line, _last_line(value, lines) + 1
            # Keep whatever precedes the key on its line ("- " when expect comes first).
            block[1] = lines[start][: key.start_mark.column] + block[1][indent:]
            filled_before = start > 0 and lines[start - 1].strip().startswith(_MARKER_PREFIX)
            if filled_before:
                start -= 1
            old = [line.rstrip("\r\n") for line in lines[start:end]]
            if old == block:
                result.unchanged.append(entry.case.id)
                continue
            edits.append((start, end, block))
            result.refreshed.append(entry.case.id)
            if not filled_before:
                result.by_hand.append((entry.case.id, old, block))
        else:
            last = _last_line(node, lines) + 1
            edits.append((last, last, block))
            result.added.append(entry.case.id)
    for start, end, block in sorted(edits, reverse=True):
        lines[start:end] = [line + newline for line in block]
    result.text = "".join(lines)
    return result
