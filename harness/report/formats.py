"""Every report format a grade can be shown in: its name, its renderer, its file ending.

Adding a format is one function (a ``Report`` in, text out) and one entry in ``FORMATS``:
the command line's ``--format`` choices, the files ``--output-dir`` writes and the renderer
tests (tests/report/test_formats.py, which fails for a format it does not check) all read
this table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Final, Sequence

from harness.report.model import Report
from harness.report.render import render_json, render_markdown, render_text
from harness.report.tables import gradescope_results

__all__ = ["Format", "FORMATS", "render"]


@dataclass(frozen=True)
class Format:
    render: Callable[[Report, bool, bool, Sequence[tuple[str, str]]], str]
    """``(report, colour, verbose, visibility rules) -> text``."""
    suffix: str = ""
    """The file ending ``--output-dir`` writes the format with; empty: not written there."""
    watched: bool = True
    """Whether ``--watch`` may show it (a format for a machine is read once, not watched)."""


def _text(report: Report, colour: bool, verbose: bool, visibility: Sequence[tuple[str, str]]) -> str:
    return render_text(report, colour, verbose)


def _json(report: Report, colour: bool, verbose: bool, visibility: Sequence[tuple[str, str]]) -> str:
    return render_json(report, colour, verbose)


def _markdown(report: Report, colour: bool, verbose: bool, visibility: Sequence[tuple[str, str]]) -> str:
    return render_markdown(report, colour, verbose)


def _gradescope(report: Report, colour: bool, verbose: bool, visibility: Sequence[tuple[str, str]]) -> str:
    """Gradescope's results.json: one test per check, with ``--visibility``'s rules."""
    return json.dumps(gradescope_results(report, visibility), indent=2)


FORMATS: Final[dict[str, Format]] = {
    "text": Format(_text, ".txt"),
    "json": Format(_json, ".json"),
    "markdown": Format(_markdown, ".md"),
    "gradescope": Format(_gradescope, watched=False),
}


def render(report: Report, fmt: str, *, colour: bool = False, verbose: bool = False,
           visibility: Sequence[tuple[str, str]] = ()) -> str:
    return FORMATS[fmt].render(report, colour, verbose, visibility)
