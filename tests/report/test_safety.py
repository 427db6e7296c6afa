"""Candidate text in reports: shown, never obeyed."""

import unicodedata

import pytest

from harness.report.safety import markdown_fence, markdown_inline, one_line, printable


@pytest.mark.parametrize(("text", "shown"), [
    ("\x1b[2J\rPASS", "\\x1b[2J\\rPASS"),
    ("a\ud800b", "a\\ud800b"),  # a lone surrogate: no encoding can print it, so it would crash the report
    ("\u202egnirts\u202c \u2066x\u2069", "\\u202egnirts\\u202c \\u2066x\\u2069"),
    ("\u200bhid\ufeffden\xad", "\\u200bhid\\ufeffden\\xad"),
    ("\U000e0041\U000e0042", "\\U000e0041\\U000e0042"),  # invisible tag characters
    ("one\u2028two\u2029", "one\\u2028two\\u2029"),
    ("tab\tand\nnewline stay", "tab\tand\nnewline stay"),
])
def test_printable_escapes_what_would_draw_reorder_hide_or_fail_to_encode(text, shown):
    assert printable(text) == shown
    printable(text).encode("utf-8")


def test_printable_leaves_no_control_format_or_separator_character_raw():
    every = "".join(map(chr, range(0x110000)))
    raw = {ch for ch in printable(every) if ch not in "\t\n"
           and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")}
    assert raw == set()


def test_markdown_inline_escapes_markup_and_stays_on_one_line():
    # The newline becomes a space, so "##" is no longer at the start of a line.
    assert markdown_inline("| x |\n## <b>[a](javascript:1)</b> `c`") == \
        "\\| x \\| ## \\<b\\>\\[a\\](javascript\\:1)\\</b\\> \\`c\\`"


def test_markdown_inline_leaves_no_autolink():
    # GitHub links bare URLs, www. names and addresses; an escape inside each breaks the pattern.
    assert markdown_inline("see https://evil.example/x, WWW.evil.example or me@evil.example") == \
        "see https\\://evil.example/x, WWW\\.evil.example or me\\@evil.example"


def test_one_line_shows_newlines_as_escapes():
    assert one_line("Err\nscore 60.0/60.0 [graded]\r\t\x1b") == "Err\\nscore 60.0/60.0 [graded]\\r\\t\\x1b"


def test_a_fence_cannot_be_closed_from_inside():
    assert markdown_fence("```\nx", "python") == ["````python", "```", "x", "````"]
