"""Renderers: a Report in, a string out. They format; they never score.

Text is for the candidate at a terminal and fits on a screen: a header, the
integrity findings, "Fix first" (the root causes, each with its explanation,
hint and one snippet), one line of counts per level, failures expanded (a
failure that a root cause explains says so in one line instead of repeating
its own hint), passes and not-attempted checks collapsed (``verbose`` lists
every check), and a last line with the scores and the interview bar.

Markdown is the interviewer's write-up: the summary, the root causes, a table
of concepts, and the full table of checks folded away. Candidate text is
escaped in every format (``safety``).
"""

from __future__ import annotations

import json
import re
import textwrap
from collections import Counter
from typing import Any, Callable, Final

import click

from harness.vocabulary import LEVELS
from harness.report.model import CheckResult, Report, ReviewEntry, RootCause
from harness.report.safety import markdown_code, markdown_fence, markdown_inline, one_line, printable
from harness.report.saved_table import markdown_lines, saved_table, text_lines
from harness.vocabulary import FAILING

__all__ = ["render_text", "render_json", "render_markdown", "concept_table"]

_MARKS: Final = {"passed": "PASS", "failed": "FAIL", "error": "ERR ", "timeout": "TIME", "not_attempted": " -- ",
                 "skipped": "SKIP"}
_COLOURS: Final = {"passed": "green", "failed": "red", "error": "red", "timeout": "yellow",
                   "not_attempted": "bright_black", "skipped": "bright_black"}
EXPANDED_PER_LEVEL: Final = 3
"""Unexplained failures shown in full per level (with their snippet); the rest get one line each unless verbose."""
CAUSES_IN_FULL: Final = 3
"""Root causes shown with explanation, hint and snippet; the rest get one line each unless verbose."""
INFORMATIONAL: Final = frozenset({"followups.saved_tensors"})
"""Checks whose failure is a measurement, not a wrong answer: one line each (their table is below, with -v)."""
_WIDTH: Final = 100
_OUTPUT_LINES: Final = 5


def render_json(report: Report, colour: bool = False, verbose: bool = False) -> str:
    return json.dumps(report.to_dict(), indent=2)


# ---- text -------------------------------------------------------------------------------------------


def render_text(report: Report, colour: bool = False, verbose: bool = False) -> str:
    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if colour else text

    lines = _header(report, style)
    lines += _integrity(report, style)
    lines += _fix_first(report, style, verbose)
    causes = {check: (i, cause) for i, cause in enumerate(report.root_causes, 1) for check in cause.checks}
    for level in LEVELS:
        checks = [c for c in report.checks if c.level == level]
        if checks:
            lines += _level(level, checks, report, causes, style, verbose)
    table = saved_table(report)
    if table is not None:
        lines += text_lines(table, full=verbose)
    lines += _output(report, style)
    lines += ["", _last_line(report, style)]
    return "\n".join(lines)


def _header(report: Report, style: Callable[..., str]) -> list[str]:
    facts = [f"seed {report.seed}", f"isolation: {report.isolation}"]
    if report.variant != "tensor":
        facts.insert(0, f"variant: {printable(report.variant)}")
    if report.source_sha256:
        facts.append(f"sha256 {report.source_sha256[:12]}")
    lines = [style(f"grade {one_line(report.file)}", bold=True) + f"  ({', '.join(facts)})"]
    if report.agreements:
        lines.append(f"  agreed interface: {_agreed(report)}")
    if report.isolation_note:
        lines.append(style(f"  basic isolation: {printable(report.isolation_note)}", fg="yellow"))
    if report.source_note:
        lines.append(f"  {one_line(report.source_note)}")
    if report.status in ("error", "timeout"):
        message = printable(report.message).splitlines() or [""]
        lines.append(style(f"could not be graded ({report.status}): {message[0]}", fg="red"))
        lines += [style(f"  | {line}", fg="red") for line in message[1:]]  # never taken for a line of ours
    return lines


def _integrity(report: Report, style: Callable[..., str]) -> list[str]:
    lines: list[str] = []
    if report.integrity_violations:
        lines += ["", style("integrity violation (the score is 0): torch's autograd was used", fg="red", bold=True)]
        lines += [f"  - {one_line(v)}" for v in report.integrity_violations]
    if report.integrity_review:
        lines += ["", style("integrity review: a person must read these lines before the interview bar can pass",
                            fg="yellow", bold=True)]
        # Entries with the same reason share it: each line and construct is still named.
        by_reason: dict[str, list[ReviewEntry]] = {}
        for entry in report.integrity_review:
            by_reason.setdefault(str(entry.why), []).append(entry)
        for why, entries in by_reason.items():
            for entry in entries:
                where = f"line {entry.line}" if entry.line else "at run time"
                lines.append(f"  - {where}: {one_line(str(entry.construct))}")
            lines += [style(f"      {part}", fg="bright_black") for part in _wrap(printable(why), 90)]
    return lines


def _fix_first(report: Report, style: Callable[..., str], verbose: bool) -> list[str]:
    """The root causes, the one to fix first first: what is wrong, where to look, one graph that shows it."""
    if report.diagnosis_error:
        return ["", style("Fix first", bold=True),
                style(f"  no root causes: {printable(report.diagnosis_error)}", fg="yellow"),
                "  Every verdict and the score below stand; only the advice on what to fix is missing."]
    if not report.root_causes:
        return []
    lines = ["", style("Fix first", bold=True)]
    for i, cause in enumerate(report.root_causes, 1):
        checks = list(cause.checks)
        waiting = list(cause.waiting)
        count = (f"{len(checks)} failing check{'s' if len(checks) != 1 else ''}" if checks
                 else f"{len(waiting)} check{'s' if len(waiting) != 1 else ''} not attempted" if waiting
                 else "an integrity finding")
        lost = f", {cause.points:.1f} points" if cause.points else ""
        lines.append(style(f"  {i}. {one_line(_cause_name(cause))}", bold=True) + f"  ({count}{lost})")
        if i > CAUSES_IN_FULL and not verbose:
            continue
        lines += [f"     {part}" for part in _wrap(printable(str(cause.explanation)))]
        if cause.hint:
            lines += [style(f"     {part}", fg="cyan") for part in _wrap("hint: " + printable(str(cause.hint)))]
        if cause.snippet:
            lines.append(style("     reproduce:", bold=True))
            lines += [f"       {printable(line)}" for line in cause.snippet.splitlines()]
        if checks:
            shown = ", ".join(checks[:4]) + (f" and {len(checks) - 4} more" if len(checks) > 4 else "")
            lines.append(style(f"     explains: {shown}", fg="bright_black"))
    return lines


def _cause_name(cause: RootCause) -> str:
    return cause.title


def _level(level: str, checks: list[CheckResult], report: Report, causes: dict[str, tuple[int, RootCause]],
           style: Callable[..., str], verbose: bool) -> list[str]:
    totals = report.levels.get(level, {"score": 0.0, "max_score": 0.0})
    counts = Counter(c.outcome for c in checks)
    summary = ", ".join(f"{counts[o]} {o.replace('_', ' ')}" for o in ("passed", "failed", "error", "timeout",
                                                                           "not_attempted", "skipped") if counts[o])
    lines = ["", style(f"{level:<11} {totals['score']:5.1f}/{totals['max_score']:<5.1f}", bold=True) + f"  {summary}"]
    expanded = 0
    explained: dict[int, list[str]] = {}
    # Beyond the first few, failures that say the same thing (a process that died on every
    # request, say) are one line and a list of ids.
    alike = Counter(_gist(c.message) for c in checks if c.outcome in FAILING and c.id not in causes)
    grouped: dict[str, list[CheckResult]] = {}
    for c in checks:
        if c.outcome in FAILING:
            if c.id in causes and not verbose:
                explained.setdefault(causes[c.id][0], []).append(c.id)
                continue
            if c.id in INFORMATIONAL and not verbose:
                mark = style(_MARKS[c.outcome], fg=_COLOURS[c.outcome])
                lines.append(f"  {mark} {c.id:<36} {c.points:5.1f}/{c.max_points:<5.1f} "
                             + style(f"{_first(c.message, 80)} (-v shows the table)", fg="bright_black"))
                continue
            if not verbose and expanded >= EXPANDED_PER_LEVEL and alike[_gist(c.message)] > 1:
                grouped.setdefault(_gist(c.message), []).append(c)
                continue
            full = verbose or expanded < EXPANDED_PER_LEVEL
            lines.append(_check_line(c, style))
            if c.id in causes:
                number, cause = causes[c.id]
                lines.append(style(f"         {_first(c.message)}", fg="bright_black"))
                lines.append(style(f"         likely caused by: {one_line(_cause_name(cause))} (Fix first {number})",
                                   fg="magenta"))
            elif full:
                expanded += 1
                lines += _expand(c, style)
            else:
                lines.append(style(f"         {_first(c.message)}", fg="bright_black"))
        elif verbose:
            lines.append(_check_line(c, style))
            if c.outcome != "passed" and c.message:
                lines.append(style(f"         {_first(c.message)}", fg="bright_black"))
    for gist, members in grouped.items():
        outcome = Counter(c.outcome for c in members).most_common(1)[0][0]
        lines.append(style(f"  {_MARKS[outcome]} {len(members)} checks", fg=_COLOURS[outcome])
                     + style(f": {gist}", fg="bright_black"))
        lines += [style(f"       {part}", fg="bright_black") for part in _ids([c.id for c in members], verbose)]
    for number, ids in sorted(explained.items()):
        name = one_line(_cause_name(report.root_causes[number - 1]))
        lines.append(style(f"  FAIL {len(ids)} {'check' if len(ids) == 1 else 'checks'}", fg="red")
                     + style(f" likely caused by: {name} (Fix first {number})", fg="magenta"))
        lines += [style(f"       {part}", fg="bright_black") for part in _ids(ids, verbose)]
    missing = [c for c in checks if c.outcome in ("not_attempted", "skipped")]
    if missing and not verbose:
        reasons = Counter(_first(c.message, 70) for c in missing)
        for reason, n in reasons.most_common(3):
            lines.append(style(f"  {n} {'check' if n == 1 else 'checks'} {reason}", fg="bright_black"))
        if len(reasons) > 3:
            lines.append(style(f"  ... and {len(missing) - sum(n for _, n in reasons.most_common(3))} more "
                               "(-v lists every check)", fg="bright_black"))
    return lines


def _check_line(c: CheckResult, style: Callable[..., str]) -> str:
    mark = style(_MARKS[c.outcome], fg=_COLOURS[c.outcome])
    return f"  {mark} {c.id:<36} {c.points:5.1f}/{c.max_points:<5.1f} {c.title}"


def _expand(c: CheckResult, style: Callable[..., str]) -> list[str]:
    message = c.message.splitlines()
    out = [f"         {'| ' if i else ''}{printable(line)}" for i, line in enumerate(message)]
    d = c.details
    if d.get("snippet"):
        out.append(style("         reproduce:", bold=True))
        out += [f"           {printable(line)}" for line in d["snippet"].splitlines()]
    if "hint" in d:
        out += [style(f"         {part}", fg="cyan") for part in _wrap("hint: " + printable(str(d["hint"])), 90)]
    return out


def _output(report: Report, style: Callable[..., str]) -> list[str]:
    lines: list[str] = []
    for stream in ("stdout", "stderr"):
        text = report.output.get(stream, "").strip()
        if text:
            shown = text.splitlines()
            lines += ["", style(f"the submission wrote to {stream}:", bold=True)]
            lines += ["  | " + printable(line)[:_WIDTH] for line in shown[:_OUTPUT_LINES]]
            if len(shown) > _OUTPUT_LINES:
                lines.append(f"  | ... ({len(shown) - _OUTPUT_LINES} more lines; the JSON report has them all)")
    return lines


def _last_line(report: Report, style: Callable[..., str]) -> str:
    line = style(f"score {report.score:.1f}/{report.max_score:.1f}", bold=True) + f"  [{report.status}]"
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
    return line


def _ids(ids: list[str], verbose: bool) -> list[str]:
    """Check ids wrapped to the page: three lines at most unless verbose."""
    wrapped = _wrap(", ".join(ids), _WIDTH - 7)
    if verbose or len(wrapped) <= 3:
        return wrapped
    for keep in range(len(ids) - 1, 0, -1):
        lines = _wrap(", ".join(ids[:keep]) + f" and {len(ids) - keep} more (-v lists them)", _WIDTH - 7)
        if len(lines) <= 3:
            return lines
    return [f"{len(ids)} checks (-v lists them)"]


def _gist(message: str) -> str:
    """A failure's message without the graph it ran: what several failing checks may have in common."""
    return _first(re.sub(r"^running [^:]*: ", "", message), 140)


def _first(message: str, width: int = 110) -> str:
    first = printable(message.splitlines()[0]) if message else ""
    return first if len(first) <= width else first[: width - 3].rstrip() + "..."


def _wrap(text: str, width: int = _WIDTH) -> list[str]:
    return textwrap.wrap(text, width) or [""]


# ---- Markdown ------------------------------------------------------------------------------------


def concept_table(report: Report) -> list[tuple[str, str, int, int, int]]:
    """(level, concept, passed, failed, not attempted) per concept, in level order."""
    rows: dict[tuple[str, str], list[int]] = {}
    for c in report.checks:
        row = rows.setdefault((c.level, c.concept), [0, 0, 0])
        row[0 if c.outcome == "passed" else 1 if c.outcome in FAILING else 2] += 1
    order = {level: i for i, level in enumerate(LEVELS)}
    return [(level, concept, *row) for (level, concept), row in sorted(rows.items(), key=lambda kv: (
        order.get(kv[0][0], 9), kv[0][1]))]


def render_markdown(report: Report, colour: bool = False, verbose: bool = False) -> str:
    """The interviewer's write-up: summary, root causes, concepts, then every check folded away."""
    lines = [f"## Autograd grade: {markdown_inline(report.file)}", ""]
    lines += _markdown_summary(report)
    if report.integrity_violations:
        lines += ["", "### Integrity violation", "",
                  "Torch's autograd was used (proof, so the score is 0):", ""]
        lines += [f"- {markdown_inline(v)}" for v in report.integrity_violations]
    if report.integrity_review:
        lines += ["", "### Integrity review", "",
                  "Not proof of cheating, but the interview bar waits until a person has read these lines:", ""]
        for entry in report.integrity_review:
            where = f"line {entry.line}" if entry.line else "at run time"
            lines.append(f"- **{where}**: {markdown_inline(str(entry.construct))}: "
                         f"{markdown_inline(str(entry.why))}")
    if report.diagnosis_error:
        lines += ["", "### Root causes", "", f"None: {markdown_inline(report.diagnosis_error)}. Every verdict and "
                  "the score stand.", ""]
    if report.root_causes:
        lines += ["", "### Root causes (fix the first first)", ""]
        for i, cause in enumerate(report.root_causes, 1):
            checks = cause.checks
            lines += [f"{i}. **{markdown_inline(_cause_name(cause))}** "
                      f"({len(checks)} failing check{'s' if len(checks) != 1 else ''}"
                      + (f", {cause.points:.1f} points" if cause.points else "") + ")", ""]
            if cause.explanation:
                lines += [f"   {markdown_inline(str(cause.explanation))}", ""]
            if cause.hint:
                lines += [f"   *Hint:* {markdown_inline(str(cause.hint))}", ""]
            if cause.snippet:
                lines += ["   " + line for line in markdown_fence(cause.snippet, "python")] + [""]
            if checks:
                lines += ["   Explains: " + ", ".join(markdown_code(c) for c in checks), ""]
    rows = concept_table(report)
    if rows:
        lines += ["", "### Concepts", "", "| level | concept | passed | failed | not attempted |",
                  "|---|---|---:|---:|---:|"]
        lines += [f"| {level} | {concept} | {p} | {f} | {n} |" for level, concept, p, f, n in rows]
        lines += ["", "Each concept is explained, at four depths, by `grade explain CONCEPT`."]
    table = saved_table(report)
    if table is not None:
        lines += markdown_lines(table)
    unexplained = [c for c in report.checks if c.outcome in FAILING and not c.diagnosis]
    if unexplained:
        lines += ["", "### Other failures", ""]
        for c in unexplained:
            lines.append(f"- `{c.id}`: {markdown_inline(c.message)}")
    if report.checks:
        lines += ["", "<details>", f"<summary>Every check ({len(report.checks)})</summary>", "",
                  "| level | check | outcome | points | note |", "|---|---|---|---:|---|"]
        for c in report.checks:
            note = markdown_inline(c.message) if c.outcome != "passed" else ""
            lines.append(f"| {c.level} | {markdown_code(c.id)} | {c.outcome} | "
                         f"{c.points:.1f}/{c.max_points:.1f} | {note} |")
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _markdown_summary(report: Report) -> list[str]:
    lines = [f"**Score {report.score:.1f} / {report.max_score:.1f}** ({report.status}; seed {report.seed}; "
             f"isolation {report.isolation}" + (f", sha256 `{report.source_sha256[:12]}`" if report.source_sha256
                                                 else "") + ")", ""]
    interview = report.interview
    if interview is not None:
        verdict = "passed" if interview.passed else "not passed"
        facts = [f"core {interview.core_score:.1f} of {interview.bar:.1f} needed"]
        if interview.gates_failed:
            facts.append("gates failed: " + ", ".join(f"`{g}`" for g in interview.gates_failed))
        if interview.gates_not_attempted:
            facts.append("gates not attempted: " + ", ".join(f"`{g}`" for g in interview.gates_not_attempted))
        if interview.needs_review:
            facts.append("needs review (see below)")
        lines += [f"Interview bar: **{verdict}** ({'; '.join(facts)})", ""]
    levels = " · ".join(f"{level} {v['score']:.1f}/{v['max_score']:.1f}" for level, v in report.levels.items())
    if levels:
        lines += [f"Levels: {levels}", ""]
    if report.agreements:
        lines += [f"Agreed interface: {_agreed(report)} (checks of what was agreed away are not required)", ""]
    if report.variant != "tensor":
        lines += [f"Variant: {markdown_inline(report.variant)} (each op a torch.autograd.Function; what torch's "
                  "engine does is not credited)", ""]
    if report.source_note:
        lines += [f"Source: {markdown_inline(report.source_note)}", ""]
    if report.message:
        lines += [f"> {markdown_inline(report.message)}", ""]
    return lines


def _agreed(report: Report) -> str:
    return ", ".join(f"{printable(str(k))}={printable(str(v))}" for k, v in report.agreements.items())

