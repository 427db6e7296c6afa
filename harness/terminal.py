"""The terminal a text is shown on: its size, and text wrapped to its width with hanging indents.

Every text the grader prints for a person (the report, ``grade explain``, practice help, spec
messages) is wrapped here. ``COLUMNS`` and ``LINES`` win, as in every Unix tool; then the
terminal's own size; a pipe or a file gets ``DEFAULT_WIDTH`` columns. Code (a snippet, an
example) is never wrapped: a broken line would not run.
"""

from __future__ import annotations

import os
import textwrap
from typing import Final, TextIO

__all__ = ["DEFAULT_WIDTH", "MIN_WIDTH", "SCREEN_LINES", "width", "height", "wrap", "clip", "for_stream"]

DEFAULT_WIDTH: Final = 100
"""Columns when the width is unknown (a pipe, a file)."""
MIN_WIDTH: Final = 40
"""Narrower than this, text is wrapped at this width anyway: below it a hanging indent leaves no room."""
SCREEN_LINES: Final = 40
"""The lines of the screen a default report fits when the terminal's height is unknown."""


def _env(name: str) -> int | None:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def _size(stream: TextIO | None) -> os.terminal_size | None:
    if stream is None:
        return None
    try:
        if not stream.isatty():
            return None
        return os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None


def width(stream: TextIO | None = None) -> int:
    """The columns text for ``stream`` is wrapped to: ``COLUMNS``, else the terminal's, else ``DEFAULT_WIDTH``."""
    columns = _env("COLUMNS")
    if columns is None:
        size = _size(stream)
        columns = size.columns if size is not None and size.columns > 0 else DEFAULT_WIDTH
    return max(MIN_WIDTH, columns)


def height(stream: TextIO | None = None) -> int | None:
    """The lines of ``stream``'s screen: ``LINES``, else the terminal's; None when it is no terminal."""
    lines = _env("LINES")
    if lines is None:
        size = _size(stream)
        lines = size.lines if size is not None and size.lines > 0 else None
    return lines


def wrap(text: str, columns: int, indent: str = "", hanging: str | None = None) -> list[str]:
    """``text`` wrapped to ``columns``: the first line after ``indent``, the next ones after ``hanging``
    (by default ``indent`` and two spaces more). A word is cut only when it is longer than a line (a
    long path); a check id, a hyphenated word, stays whole."""
    if hanging is None:
        hanging = indent + "  "
    columns = max(columns, len(hanging) + 20)
    return textwrap.wrap(text, columns, initial_indent=indent, subsequent_indent=hanging, break_long_words=True,
                         break_on_hyphens=False) or [indent.rstrip()]


def clip(text: str, columns: int) -> str:
    """``text`` cut to ``columns``, with '...' where it was cut."""
    return text if len(text) <= columns else text[: max(0, columns - 3)].rstrip() + "..."


def for_stream(text: str, stream: TextIO | None) -> str:
    """``text`` (a one-line message such as an error) wrapped to ``stream``'s width when a person reads it there;
    piped, left one line, for the log or tool that reads it."""
    if _size(stream) is None:
        return text
    return "\n".join(wrap(text, width(stream), "", "  "))
