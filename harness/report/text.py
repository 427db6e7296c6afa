"""The text report: for the candidate at a terminal, fitted to its width and, by default, to one screen.

The default report is the header (with the integrity findings), "Fix first" (the first causes
in full while the screen has room, the rest one line each), one line per level (and the
failures no cause explains, one line each), what the submission printed, and the score line.
What does not fit waits one ``-v`` away: ``verbose`` shows every cause in full and every
check. Every line is wrapped to the width, with hanging indents; snippet code never is (a
broken line would not run). Candidate text is escaped (``safety``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Final, Sequence

import click

from harness.report.model import CheckResult, Report, ReviewEntry, RootCause
from harness.report.safety import one_line, printable
from harness.report.saved_table import saved_table, text_lines
from harness.terminal import DEFAULT_WIDTH, SCREEN_LINES, clip, wrap
from harness.vocabulary import FAILING, INFORMATIONAL, LEVELS

__all__ = ["render_text", "MORE_WITH_VERBOSE"]

_MARKS: Final = {"passed": "PASS", "failed": "FAIL", "error": "ERR ", "timeout": "TIME", "not_attempted": " -- ",
                 "skipped": "SKIP"}
_COLOURS: Final = {"passed": "green", "failed": "red", "error": "red", "timeout": "yellow",
                   "not_attempted": "bright_black", "skipped": "bright_black"}
UNEXPLAINED_PER_LEVEL: Final = 3
"""Failures no root cause explains, one line each per level in the default report; the rest are counted."""
EXPANDED_PER_LEVEL: Final = 3
"""Such failures expanded (message, snippet, hint) per level with ``verbose``, before the rest are grouped."""
_OUTPUT_LINES: Final = 3
"""Lines of what the submission printed, per stream, in the default report (``verbose``: ``_OUTPUT_LINES_ALL``)."""
_OUTPUT_LINES_ALL: Final = 20
MORE_WITH_VERBOSE: Final = "-v shows every check and every cause in full"
"""The line that says where the rest of a default report is."""


Style = Callable[..., str]


@dataclass
class _Part:
    """Lines of the report; ``rank`` orders the optional ones (None: always shown)."""

    lines: list[str]
    rank: tuple[int, ...] | None = None
    needs: frozenset[tuple[int, ...]] = frozenset()
    """The ranks of the parts that must be shown for this one to be (the causes before it, in full)."""
    unless: tuple[int, ...] | None = None
    """A required part that says what an optional one would have shown: dropped when that one is shown."""


@dataclass
class _Page:
    width: int
    style: Style
    screen: bool = False
    """Whether the height is in screen rows (a line wider than the screen takes two) rather than in lines."""
    parts: list[_Part] = field(default_factory=list)

    def add(self, *lines: str, rank: tuple[int, ...] | None = None,
            needs: frozenset[tuple[int, ...]] = frozenset(), unless: tuple[int, ...] | None = None
            ) -> tuple[int, ...] | None:
        """Add ``lines`` (optional ones with their ``rank``); the rank added, None for nothing optional."""
        if not lines:
            return None
        self.parts.append(_Part(list(lines), rank, needs, unless))
        return rank

    def optional(self) -> frozenset[tuple[int, ...]]:
        """The ranks of every optional part so far."""
        return frozenset(p.rank for p in self.parts if p.rank is not None)

    def wrapped(self, text: str, indent: str = "", hanging: str | None = None, **style: Any) -> list[str]:
        return [self.style(line, **style) if style else line for line in wrap(text, self.width, indent, hanging)]

    def rows(self, lines: list[str]) -> int:
        """The rows ``lines`` take: on a screen, a line wider than it (snippet code) takes more than one."""
        if not self.screen:
            return len(lines)
        return sum(max(1, -(-len(click.unstyle(line)) // self.width)) for line in lines)

    def fitted(self, height: int | None) -> list[str]:
        """The lines shown: every required part, and the optional ones in rank order while ``height`` rows have
        room."""
        if height is None:
            return [line for part in self.parts if part.unless is None for line in part.lines]
        room = height - sum(self.rows(p.lines) for p in self.parts if p.rank is None)
        shown: set[tuple[int, ...]] = set()
        for part in sorted((p for p in self.parts if p.rank is not None), key=lambda p: p.rank or ()):
            if part.needs <= shown and self.rows(part.lines) <= room:
                room -= self.rows(part.lines)
                assert part.rank is not None
                shown.add(part.rank)
        return [line for p in self.parts if (p.rank is None and p.unless not in shown) or p.rank in shown
                for line in p.lines]


def render_text(report: Report, colour: bool = False, verbose: bool = False, *, width: int | None = None,
                height: int | None = None, notes: Sequence[str] = (), more: str | None = None,
                screen: bool = False) -> str:
    """The report as text, ``width`` columns wide (100 by default).

    Unless ``verbose``, it fits ``height`` lines (40 by default) when it can: the header, the
    integrity findings, the first root cause in full, every other cause's first line, the level
    lines and the score line always show; the next causes in full, then the failures no cause
    explains, fill the room that is left, in order. On a ``screen`` (``--watch``) the height is in
    rows, and even the first cause's explanation, hint and snippet give way, in that order, to
    keep every cause's first line in view. ``notes`` (what changed since the last grade) come just
    before the score line; ``more`` says where the rest is (by default, ``-v``; '' says nothing).
    """
    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if colour else text

    page = _Page(width or DEFAULT_WIDTH, style, screen)
    _header(page, report)
    _integrity(page, report)
    _fix_first(page, report, verbose, first_in_full=not screen)
    causes = {check: (i, cause) for i, cause in enumerate(report.root_causes, 1) for check in cause.checks}
    if report.checks and not verbose:
        page.add("")  # the level lines, one block
    for level in LEVELS:
        checks = [c for c in report.checks if c.level == level]
        if checks:
            (_level_verbose if verbose else _level)(page, level, checks, report, causes)
    table = saved_table(report)
    if table is not None:
        page.add(*text_lines(table, full=verbose, width=page.width))
    _output(page, report, _OUTPUT_LINES_ALL if verbose else _OUTPUT_LINES)
    if notes:
        page.add("", style(notes[0], bold=True), *(line for note in notes[1:] for line in page.wrapped(note, "  ")))
    score = ["", *_last_line(page, report)]
    if verbose:
        page.add(*score)
        return "\n".join(page.fitted(None))
    if more is None:
        more = MORE_WITH_VERBOSE if report.root_causes else "-v lists every check"
    if more and report.checks:  # where the rest is: a newcomer learns it here
        page.add(*page.wrapped(f"({more})", fg="bright_black"))
    page.add(*score)
    return "\n".join(page.fitted(height or SCREEN_LINES))


def _header(page: _Page, report: Report) -> None:
    facts = [f"seed {report.seed}", f"isolation: {report.isolation}"]
    if report.variant != "tensor":
        facts.insert(0, f"variant: {printable(report.variant)}")
    if report.source_sha256:
        facts.append(f"sha256 {report.source_sha256[:12]}")
    title = f"grade {one_line(report.file)}"
    first, *rest = wrap(f"{title}  ({', '.join(facts)})", page.width, "", "  ")
    # The title is bold; the facts after it are not (when they share its line).
    lines = [page.style(first[:len(title)], bold=True) + first[len(title):], *rest]
    if report.agreements:
        lines += page.wrapped(f"agreed interface: {_agreed(report)}", "  ")
    if report.isolation_note:
        lines += page.wrapped(f"basic isolation: {printable(report.isolation_note)}", "  ", fg="yellow")
    if report.source_note:
        lines += page.wrapped(one_line(report.source_note), "  ")
    if report.status in ("error", "timeout"):
        message = printable(report.message).splitlines() or [""]
        lines += page.wrapped(f"could not be graded ({report.status}): {message[0]}", "", "  | ", fg="red")
        # Never taken for a line of ours: every line of the submission's text starts with '|'.
        lines += [page.style(line, fg="red") for text in message[1:] for line in wrap(text, page.width, "  | ", "  | ")]
    page.add(*lines)


def _integrity(page: _Page, report: Report) -> None:
    lines: list[str] = []
    if report.integrity_violations:
        lines += ["", *page.wrapped("integrity violation (the score is 0): torch's autograd was used", fg="red",
                                    bold=True)]
        for v in report.integrity_violations:
            lines += page.wrapped(one_line(v), "  - ", "    ")
    if report.integrity_review:
        lines += ["", *page.wrapped("integrity review: a person must read these lines before the interview bar "
                                    "can pass", fg="yellow", bold=True)]
        # Entries with the same reason share it: each line and construct is still named.
        by_reason: dict[str, list[ReviewEntry]] = {}
        for entry in report.integrity_review:
            by_reason.setdefault(str(entry.why), []).append(entry)
        for why, entries in by_reason.items():
            for entry in entries:
                where = f"line {entry.line}" if entry.line else "at run time"
                lines += page.wrapped(f"{where}: {one_line(str(entry.construct))}", "  - ", "    ")
            lines += page.wrapped(printable(why), "      ", "      ", fg="bright_black")
    page.add(*lines)


def _fix_first(page: _Page, report: Report, verbose: bool, first_in_full: bool = True) -> None:
    """The root causes, the one to fix first first: what is wrong, where to look, one graph that shows it
    (the first always, unless only the room that is left decides)."""
    style = page.style
    if report.diagnosis_error:
        page.add("", style("Fix first", bold=True),
                 *page.wrapped(f"no root causes: {printable(report.diagnosis_error)}", "  ", "    ", fg="yellow"),
                 *page.wrapped("Every verdict and the score below stand; only the advice on what to fix is missing.",
                               "  ", "    "))
        return
    if not report.root_causes:
        return
    page.add("", style("Fix first", bold=True))
    before: frozenset[tuple[int, ...]] = frozenset()
    for i, cause in enumerate(report.root_causes, 1):
        name = f"  {i}. {one_line(_cause_name(cause))}"
        title = wrap(f"{name}  ({_cause_count(cause)})", page.width, "", "     ")
        # The cause's name is bold, its count is not.
        page.add(*[style(line[:len(name)], bold=True) + line[len(name):] if n == 0 else line
                   for n, line in enumerate(title)])
        # A cause is shown in full only when the one before it is: the first causes in full, the rest one line.
        parts = (page.wrapped(printable(str(cause.explanation)), "     ", "     ") if cause.explanation else [],
                 page.wrapped("hint: " + printable(str(cause.hint)), "     ", "       ", fg="cyan")
                 if cause.hint else [],
                 _snippet(page, cause.snippet, "     "))
        if i > 1 and not verbose:  # past the first, a cause is shown whole or by its first line
            parts = ([line for lines in parts for line in lines],)
        required = verbose or (i == 1 and first_in_full)
        added = [page.add(*lines, rank=None if required else (i, n), needs=before) for n, lines in enumerate(parts)]
        before = frozenset(rank for rank in added if rank is not None)
        if verbose and cause.checks:
            shown = ", ".join(cause.checks[:4]) + (f" and {len(cause.checks) - 4} more" if len(cause.checks) > 4
                                                   else "")
            page.add(*page.wrapped(f"explains: {shown}", "     ", "       ", fg="bright_black"))


def _cause_count(cause: RootCause) -> str:
    checks, waiting = list(cause.checks), list(cause.waiting)
    count = (f"{len(checks)} failing check{'s' if len(checks) != 1 else ''}" if checks
             else f"{len(waiting)} check{'s' if len(waiting) != 1 else ''} not attempted" if waiting
             else "an integrity finding")
    return count + (f", {cause.points:.1f} points" if cause.points else "")


def _snippet(page: _Page, snippet: str, indent: str) -> list[str]:
    """'reproduce:' and the snippet's code, as it is: code is never wrapped."""
    if not snippet:
        return []
    return [page.style(f"{indent}reproduce:", bold=True), *(f"{indent}  {printable(line)}".rstrip()
                                                            for line in snippet.splitlines())]


def _cause_name(cause: RootCause) -> str:
    return cause.title  # "likely: ..." where no experiment confirmed it


def _level_line(page: _Page, level: str, checks: list[CheckResult], report: Report, aside: str = "") -> list[str]:
    totals = report.levels.get(level, {"score": 0.0, "max_score": 0.0})
    counts = Counter(c.outcome for c in checks)
    summary = ", ".join(f"{counts[o]} {o.replace('_', ' ')}" for o in ("passed", "failed", "error", "timeout",
                                                                           "not_attempted", "skipped") if counts[o])
    head = f"{level:<11} {totals['score']:5.1f}/{totals['max_score']:<5.1f}"
    first, *rest = wrap(f"{head}  {summary}{aside}", page.width, "", " " * 19)
    return [page.style(first[:len(head)], bold=True) + first[len(head):], *rest]


def _level(page: _Page, level: str, checks: list[CheckResult], report: Report,
           causes: dict[str, tuple[int, RootCause]]) -> None:
    """The level's line; below it, when there is room, the failures no root cause explains, one line each
    (once every cause is shown in full, each of them in full too)."""
    unexplained = [c for c in checks if c.outcome in FAILING and c.id not in causes]
    aside = f" ({len(unexplained)} not in Fix first)" if unexplained and report.root_causes else ""
    page.add(*_level_line(page, level, checks, report, aside))
    first_cause = frozenset(rank for rank in page.optional() if rank[0] == 1)
    causes_in_full = frozenset(rank for rank in page.optional() if rank[0] <= len(report.root_causes))
    lines = []
    for c in unexplained[:UNEXPLAINED_PER_LEVEL]:
        mark = page.style(_MARKS[c.outcome], fg=_COLOURS[c.outcome])
        tail = " (-v shows the table)" if c.id in INFORMATIONAL else ""
        text = clip(f"  {_MARKS[c.outcome]} {c.id}: {_first(c.message)}", page.width - len(tail)) + tail
        lines.append(mark.join(text.split(_MARKS[c.outcome], 1)))
    if len(unexplained) > UNEXPLAINED_PER_LEVEL:
        more = len(unexplained) - UNEXPLAINED_PER_LEVEL
        lines.append(page.style(f"  and {more} more failing check{'s' if more != 1 else ''} (-v lists them)",
                                fg="bright_black"))
    # After the first cause in full, before the next: a failure Fix first does not name must not go unseen.
    page.add(*lines, rank=(1, 4, LEVELS.index(level)), needs=first_cause)
    for c in unexplained[:UNEXPLAINED_PER_LEVEL]:
        if c.id not in INFORMATIONAL:
            page.add(*_expand(page, c), rank=(len(report.root_causes) + 1, LEVELS.index(level), checks.index(c)),
                     needs=causes_in_full | {(1, 4, LEVELS.index(level))})


def _level_verbose(page: _Page, level: str, checks: list[CheckResult], report: Report,
                   causes: dict[str, tuple[int, RootCause]]) -> None:
    """Every check of the level: failures expanded (the few first in full), passes and the rest one line each."""
    style = page.style
    page.add("", *_level_line(page, level, checks, report))
    expanded = 0
    # Beyond the first few, failures that say the same thing (a process that died on every
    # request, say) are one line and a list of ids.
    alike = Counter(_gist(c.message) for c in checks if c.outcome in FAILING and c.id not in causes)
    grouped: dict[str, list[CheckResult]] = {}
    lines: list[str] = []
    for c in checks:
        if c.outcome in FAILING:
            if c.id not in causes and expanded >= EXPANDED_PER_LEVEL and alike[_gist(c.message)] > 1:
                grouped.setdefault(_gist(c.message), []).append(c)
                continue
            lines += _check_line(page, c)
            if c.id in causes:
                number, cause = causes[c.id]
                lines += page.wrapped(_first(c.message), "         ", "         ", fg="bright_black")
                lines += page.wrapped(f"likely caused by: {one_line(_cause_name(cause))} (Fix first {number})",
                                      "         ", "           ", fg="magenta")
            else:
                expanded += 1
                lines += _expand(page, c)
        else:
            lines += _check_line(page, c)
            if c.outcome != "passed" and c.message:
                lines += page.wrapped(_first(c.message), "         ", "         ", fg="bright_black")
    for gist, members in grouped.items():
        outcome = Counter(c.outcome for c in members).most_common(1)[0][0]
        lines += page.wrapped(f"{_MARKS[outcome]} {len(members)} checks: {gist}", "  ", "       ",
                              fg=_COLOURS[outcome])
        lines += page.wrapped(", ".join(c.id for c in members), "       ", "       ", fg="bright_black")
    page.add(*lines)


def _check_line(page: _Page, c: CheckResult) -> list[str]:
    """The check's mark, id and points; its title beside them, or below them when it does not fit."""
    mark = _MARKS[c.outcome]
    points = f"{c.points:5.1f}/{c.max_points:<5.1f}"
    head = f"  {mark} {c.id:<{max(0, min(36, page.width - 30))}} {points}"
    if len(head) > page.width:  # a narrow screen: the id alone, the points below it
        head, title = f"  {mark} {c.id}", f"{points.strip()}  {c.title}"
    elif len(head) + 1 + len(c.title) <= page.width:
        head, title = f"{head} {c.title}", ""
    else:
        title = c.title
    first, *rest = wrap(head, page.width, "", " " * 9)
    return [first.replace(mark, page.style(mark, fg=_COLOURS[c.outcome]), 1).rstrip(), *rest,
            *(wrap(title, page.width, " " * 9, " " * 9) if title else [])]


def _expand(page: _Page, c: CheckResult) -> list[str]:
    """A failure in full: its message (the worst element), its snippet, its hint."""
    out: list[str] = []
    for i, line in enumerate(c.message.splitlines()):
        prefix = "         | " if i else "         "
        out += wrap(printable(line), page.width, prefix, prefix if i else "           ")
    d = c.details
    if d.get("snippet"):
        out += _snippet(page, str(d["snippet"]), "         ")
    if "hint" in d:
        out += page.wrapped("hint: " + printable(str(d["hint"])), "         ", "           ", fg="cyan")
    return out


def _output(page: _Page, report: Report, most: int) -> None:
    """What the submission printed, per stream: its first line always, the next ones (up to ``most``) while there
    is room, and how many there are when some are left out."""
    verbose = most > _OUTPUT_LINES
    for n, stream in enumerate(("stdout", "stderr")):
        text = report.output.get(stream, "").strip()
        if not text:
            continue
        shown = [clip("  | " + printable(line), page.width) for line in text.splitlines()]
        page.add("", page.style(f"the submission wrote to {stream}:", bold=True), shown[0])
        where = "the JSON report has every one" if verbose else \
            f"-v shows up to {_OUTPUT_LINES_ALL}, the JSON report every one"
        left_out = page.wrapped(f"... ({len(shown)} lines in all: {where})", "  | ", "  | ")
        if len(shown) > most:
            page.add(*shown[1:most], rank=(1, 5, n))
            page.add(*left_out)
        elif len(shown) > 1:
            # Every line fits within ``most``: the count is said only when the screen has no room for them.
            page.add(*shown[1:], rank=(1, 5, n))
            page.add(*left_out, unless=(1, 5, n))


def _last_line(page: _Page, report: Report) -> list[str]:
    head = f"score {report.score:.1f}/{report.max_score:.1f}"
    line = f"{head}  [{report.status}]"
    interview = report.interview
    if interview is not None:
        verdict = "passed" if interview.passed else "not passed"
        why = [f"core {interview.core_score:.1f} of {interview.bar:.1f} needed"]
        if interview.gates_failed:
            why.append("gates failed: " + ", ".join(interview.gates_failed))
        if interview.gates_not_attempted:
            why.append("gates not attempted: " + ", ".join(interview.gates_not_attempted))
        if interview.needs_review:
            why.append("needs a person's review")
        line += f"  interview bar: {verdict} ({'; '.join(why)})"
    first, *rest = wrap(line, page.width, "", "  ")
    return [page.style(head, bold=True) + first[len(head):], *rest]


def _gist(message: str) -> str:
    """A failure's message without the graph it ran: what several failing checks may have in common."""
    return _first(re.sub(r"^running [^:]*: ", "", message), 140)


def _first(message: str, width: int = 110) -> str:
    first = printable(message.splitlines()[0]) if message else ""
    return clip(first, width)


def _agreed(report: Report) -> str:
    return ", ".join(f"{printable(str(k))}={printable(str(v))}" for k, v in report.agreements.items())
