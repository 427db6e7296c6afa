"""Every format a grade can be shown in: its name, its renderer, its file ending; and every file a batch
writes about its cohort.

Adding a format is one function (a ``Report`` in, text out) and one entry in ``FORMATS``:
the command line's ``--format`` choices, the files ``--output-dir`` writes and the renderer
tests (tests/report/test_formats.py, which fails for a format it does not check) all read
this table. A batch format is one function of the summary and the cohort's ``Report``s and one
entry in ``BATCH_FORMATS``, which ``grade batch`` and the same tests read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Final, Sequence

from harness.report.cohort import Cohort
from harness.report.feedback import render_feedback
from harness.report.gradescope import gradescope_results
from harness.report.html import render_html
from harness.report.model import Report
from harness.report.render import render_json, render_markdown
from harness.report.tables import render_csv, render_gradebook, render_junit
from harness.report.text import render_text

__all__ = ["Format", "FORMATS", "ALIASES", "render", "BatchFormat", "BATCH_FORMATS", "Cohort"]


@dataclass(frozen=True)
class Format:
    render: Callable[[Report, bool, bool, Sequence[tuple[str, str]], int | None, int | None], str]
    """``(report, colour, verbose, visibility rules, width, height) -> text``; width and height are the
    screen's (None: unknown), which only the text report fits itself to."""
    suffix: str = ""
    """The file ending ``--output-dir`` writes the format with; empty: not written there."""
    watched: bool = True
    """Whether ``--watch`` may show it (a format for a machine is read once, not watched)."""


def _text(report: Report, colour: bool, verbose: bool, visibility: Sequence[tuple[str, str]], width: int | None,
          height: int | None) -> str:
    return render_text(report, colour, verbose, width=width, height=height)


def _json(report: Report, colour: bool, verbose: bool, visibility: Sequence[tuple[str, str]], width: int | None,
          height: int | None) -> str:
    return render_json(report, colour, verbose)


def _markdown(report: Report, colour: bool, verbose: bool, visibility: Sequence[tuple[str, str]], width: int | None,
              height: int | None) -> str:
    return render_markdown(report, colour, verbose)


def _gradescope(report: Report, colour: bool, verbose: bool, visibility: Sequence[tuple[str, str]],
                width: int | None, height: int | None) -> str:
    """Gradescope's results.json: one test per check, with ``--visibility``'s rules."""
    return json.dumps(gradescope_results(report, visibility), indent=2)


def _feedback(report: Report, colour: bool, verbose: bool, visibility: Sequence[tuple[str, str]], width: int | None,
              height: int | None) -> str:
    """The candidate's Markdown: the write-up without hidden spec cases."""
    return render_feedback(report)


FORMATS: Final[dict[str, Format]] = {
    "text": Format(_text, ".txt"),
    "json": Format(_json, ".json"),
    "markdown": Format(_markdown, ".md"),
    "gradescope": Format(_gradescope, watched=False),
    "feedback": Format(_feedback, watched=False),
}


ALIASES: Final[dict[str, str]] = {"md": "markdown", "txt": "text"}
"""Other names a format answers to: its file ending."""


def render(report: Report, fmt: str, *, colour: bool = False, verbose: bool = False,
           visibility: Sequence[tuple[str, str]] = (), width: int | None = None, height: int | None = None) -> str:
    return FORMATS[ALIASES.get(fmt, fmt)].render(report, colour, verbose, visibility, width, height)


@dataclass(frozen=True)
class BatchFormat:
    render: Callable[[Cohort], str]
    """``cohort -> text``: the summary (``summary.summarise``, every decision applied), the reports it summarises,
    and the sources of similar pairs."""
    file: str = ""
    """The file a batch writes it to in its output folder; empty: only where an option asks (``--junit PATH``)."""


BATCH_FORMATS: Final[dict[str, BatchFormat]] = {
    "csv": BatchFormat(lambda cohort: render_csv(cohort.summary), "summary.csv"),
    "gradebook": BatchFormat(lambda cohort: render_gradebook(cohort.summary), "gradebook.csv"),
    "html": BatchFormat(render_html, "report.html"),
    "junit": BatchFormat(lambda cohort: render_junit(cohort.summary, cohort.reports)),
}
