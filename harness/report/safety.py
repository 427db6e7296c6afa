"""Showing candidate text safely: a submission writes exceptions, output and values into the report.

Every renderer passes such text through these functions, so a submission can
neither draw on the reader's terminal (escape sequences, carriage returns),
reorder what is shown (bidirectional overrides), nor inject Markdown or HTML.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["printable", "one_line", "markdown_inline", "markdown_code", "markdown_fence"]

# C0 controls but tab and newline, DEL, C1 controls; the Unicode format characters that
# reorder, join or hide text (bidirectional marks, zero-width characters, invisible tags);
# line and paragraph separators; and lone surrogates, which no output encoding accepts.
_UNSAFE: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891"
                            "\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
                            "\ud800-\udfff\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
                            "\U0001d173-\U0001d17a\U000e0000-\U000e007f]")
# ':' and '@' too, and the dot of "www.": GitHub's Markdown makes links of bare URLs, addresses and
# www. names, which an escaped character in the middle no longer is.
_MARKDOWN_SPECIAL: Final = re.compile(r"([\\`*_{}\[\]|<>~!:@])|(?<=www)(\.)", re.IGNORECASE)
_MARKDOWN_LEADING: Final = re.compile(r"^(\s*)([#+\-=]|\d+[.)])")


def printable(text: str) -> str:
    """``text`` with every control or invisible character shown as an escape (``\\x1b``, ``\\u202e``)."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def one_line(text: str) -> str:
    """``text`` on one line: ``printable``, with newlines, carriage returns and tabs shown as escapes too,
    for a field that a reader takes for one line (a name, a type, a heading)."""
    return printable(str(text)).replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


def markdown_inline(text: str) -> str:
    """``text`` as literal Markdown on one line: specials backslash-escaped, newlines as spaces."""
    flat = printable(text).replace("\r", " ").replace("\n", " ").replace("&", "&amp;")
    escaped = _MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(), flat)
    return _MARKDOWN_LEADING.sub(lambda m: m.group(1) + "\\" + m.group(2), escaped)


def markdown_code(text: str) -> str:
    """``text`` as an inline code span on one line (backslashes show as they are inside one, so nothing
    but the table's ``|`` is escaped); its backticks cannot close the span."""
    body = one_line(text).replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    tick = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return f"{tick}{pad}{body}{pad}{tick}"


def markdown_fence(text: str, language: str = "") -> list[str]:
    """``text`` in a fenced code block whose fence no line of ``text`` can close."""
    body = printable(text)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language, *body.splitlines(), fence]
