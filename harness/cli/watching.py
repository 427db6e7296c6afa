"""``grade FILE --watch`` (and ``--practice``) at a terminal: one screen per save that keeps Fix first in view.

Each save is graded once (``harness.watch``). The core level's report is drawn the moment its
checks are in, then the whole report. Each redraw fits the terminal's height: the text report
gives up the details that do not fit (never Fix first's first lines, the level lines, what
changed since the last graded save, or the score), and the full report is one key away
(``f`` and Enter) or, with ``-v``, drawn every time.
"""

from __future__ import annotations

import select
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import click

from harness import terminal
from harness.errors import HarnessError
from harness.report.model import Report, changes
from harness.terminal import wrap

__all__ = ["watch_file", "Screen", "GRADED"]

GRADED = ("graded", "integrity_violation")
"""The statuses of a report that graded checks: the ones the next save is compared with."""
PENDING = "grading the follow-ups and extensions..."
TICK = 0.05
"""Seconds between two looks at the file: a save waits half of it on average before its grade starts."""
FULL_KEY = "f and Enter: the full report"


def watch_file(path: Path, options: Any, fmt: str, colour: bool, verbose: bool, output_dir: Path | None,
               practice: Any = None) -> NoReturn:
    """Grade ``path`` on every save until Ctrl-C (exit code 130)."""
    from harness.cli.group import _launcher, _write_formats, interrupted, settle_after_imports
    from harness.watch import Watch

    screen = Screen(path, fmt, colour, verbose, practice)
    launcher = None
    try:
        launcher = _launcher(options.isolation)
        settle_after_imports()
        with launcher, Watch(launcher, options) as watch:
            while True:
                report: Report | None = None
                graded_stamp = _stamp(path)  # a save while this grade runs is graded next, not missed
                try:
                    report = watch.grade(path, lambda core: screen.show(core, final=False))
                except HarnessError as exc:
                    click.echo(terminal.for_stream(f"error: {exc}", sys.stderr), err=True)
                if report is not None:
                    screen.show(report, final=True)
                    if output_dir is not None:
                        _write_formats(report, output_dir, path.stem)
                watch.prepare()
                screen.wait_for_change(graded_stamp)
    except KeyboardInterrupt:
        if launcher is not None:
            launcher.close()  # every sandbox and worker ends now, whatever was running
        interrupted()


class Screen:
    """What a watch session shows: each report fitted to the terminal, and what changed since the last graded one."""

    def __init__(self, path: Path, fmt: str, colour: bool, verbose: bool, practice: Any = None) -> None:
        self.path, self.fmt, self.colour, self.verbose, self.practice = path, fmt, colour, verbose, practice
        self.last_graded: Report | None = None
        self.shown: Report | None = None
        self.help_lines: list[str] = []

    def show(self, report: Report, *, final: bool) -> None:
        """Draw ``report``: the core level's early one (``final`` False), or the grade's own."""
        if final and self.practice is not None:
            self.practice.width = terminal.width(sys.stdout)
            self.help_lines = self.practice.regraded(report)
        self._draw(report, final)
        if final:
            self.shown = report
            if report.status in GRADED and report.checks:
                self.last_graded = report

    def _draw(self, report: Report, final: bool) -> None:
        width = terminal.width(sys.stdout)
        rows = terminal.height(sys.stdout) or terminal.SCREEN_LINES
        keys = [FULL_KEY] + (["h and Enter: more help"] if self.practice is not None else [])
        status = (f"watching {self.path.name} for changes ({'; '.join(keys)}; Ctrl-C to stop)" if final else PENDING)
        status_lines = wrap(status, width)
        extra = self.help_lines if final else []
        if sys.stdout.isatty():
            click.clear()
        else:
            click.echo("\n" + "=" * min(60, width) + "\n")
        if self.fmt == "text":
            from harness.report.text import render_text

            # One row stays free: the cursor's, after the last line, so that nothing scrolls.
            room = rows - 1 - len(status_lines) - _rows(extra, width)
            click.echo(render_text(report, self.colour, self.verbose, width=width, height=max(room, 8),
                                   notes=self._notes(report), more=FULL_KEY if not self.verbose else "", screen=True))
        else:
            from harness.report.formats import render

            click.echo(render(report, self.fmt, colour=self.colour, verbose=self.verbose, width=width))
        if extra:
            click.echo("\n".join(extra))
        for line in status_lines:
            click.echo(line, err=True)

    def _notes(self, report: Report) -> list[str]:
        """What changed since the last graded save (a save that could not be graded is never the one compared)."""
        last = self.last_graded
        if last is None:
            return []
        if report.status not in GRADED or not report.checks:
            return ["since the last graded save:", f"this save could not be graded; the last graded save scored "
                                                   f"{last.score:.1f}/{last.max_score:.1f}"]
        return ["since the last graded save:", *changes(last, report)]

    def full(self) -> None:
        """The last report in full (every check, every cause), below the screen."""
        if self.shown is None:
            return
        from harness.report.formats import render

        click.echo(render(self.shown, self.fmt, colour=self.colour, verbose=True, width=terminal.width(sys.stdout)))
        click.echo(f"\nwatching {self.path.name} for changes (Ctrl-C to stop)", err=True)

    def more_help(self) -> None:
        """The next step of practice help: the screen drawn again with it."""
        if self.practice is None or self.shown is None:
            return
        self.practice.width = terminal.width(sys.stdout)
        self.help_lines = self.practice.requested()
        self._draw(self.shown, True)

    def wait_for_change(self, before: Any = None) -> None:
        """Return once the file differs from ``before`` (its stamp when the last grade read it); meanwhile, answer
        the keys typed (a line each): ``f`` the full report, ``h`` more practice help."""
        if before is None:
            before = _stamp(self.path)
        listening = True
        while _stamp(self.path) == before:
            # A stat() per tick costs nothing; the candidate waits for the tick.
            if not listening:
                time.sleep(TICK)
                continue
            line = _line_within(TICK)
            if line is None:
                continue
            if line is False:
                listening = False  # the input closed: keep watching the file
            elif line.strip().lower().startswith("f"):
                self.full()
            elif self.practice is not None:
                self.more_help()


def _rows(lines: list[str], width: int) -> int:
    return sum(max(1, -(-len(click.unstyle(line)) // width)) for line in lines)


def _line_within(seconds: float) -> str | bool | None:
    """A line typed on stdin within ``seconds``, None if none came, False once stdin has closed."""
    try:
        ready, _, _ = select.select([sys.stdin], [], [], seconds)
    except (OSError, ValueError):
        time.sleep(seconds)
        return False
    if not ready:
        return None
    line = sys.stdin.readline()
    return line if line else False


def _stamp(path: Path) -> tuple[float, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime, st.st_size)
