"""Renderers: a Report in, a string out. They format; they never score."""

from __future__ import annotations

import json
from typing import Callable

import click

from harness.levels import LEVELS
from harness.report.model import CheckResult, Report
from harness.report.safety import markdown_fence, markdown_inline, printable

__all__ = ["render_text", "render_json", "render_markdown", "RENDERERS"]

_MARKS = {"passed": "PASS", "failed": "FAIL", "error": "ERR ", "timeout": "TIME", "not_attempted": " -- ",
          "skipped": "SKIP"}
_COLOURS = {"passed": "green", "failed": "red", "error": "red", "timeout": "yellow", "not_attempted": "bright_black",
            "skipped": "bright_black"}


def render_json(report: Report, colour: bool = False) -> str:
    return json.dumps(report.to_dict(), indent=2)


def render_text(report: Report, colour: bool = False) -> str:
    def style(text: str, **kw) -> str:
        return click.style(text, **kw) if colour else text

    lines = [style(f"grade {printable(report.file)}", bold=True) + f"  (seed {report.seed})"]
    isolation = f"isolation: {report.isolation}"
    if report.isolation_note:
        isolation += f" ({printable(report.isolation_note)})"
    lines.append(style(isolation, fg="bright_black" if report.isolation == "sandbox" else "yellow"))
    if report.status in ("error", "timeout"):
        lines.append(style(f"could not be graded ({report.status}): {printable(report.message)}", fg="red"))
    lines.extend(_fix_first(report, style))
    causes = {check: cause for cause in report.root_causes if cause.get("bug") for check in cause["checks"]}
    for level in LEVELS:
        checks = [c for c in report.checks if c.level == level]
        if not checks:
            continue
        totals = report.levels.get(level, {"score": 0, "max_score": 0})
        lines.append("")
        lines.append(style(f"{level}  {totals['score']:.1f}/{totals['max_score']:.1f}", bold=True))
        for c in checks:
            mark = style(_MARKS[c.outcome], fg=_COLOURS[c.outcome])
            lines.append(f"  {mark} {c.id:<34} {c.points:5.1f}/{c.max_points:<5.1f} {c.title}")
            if c.outcome in ("failed", "error", "timeout"):
                lines.extend(_expand(c, style, causes.get(c.id)))
            elif c.outcome in ("not_attempted", "skipped") and c.message:
                lines.append(style(f"         {printable(c.message)}", fg="bright_black"))
    if report.integrity_violations:
        lines.append("")
        lines.append(style("integrity violations (the score is 0):", fg="red", bold=True))
        lines.extend(f"  - {printable(v)}" for v in report.integrity_violations)
    for stream in ("stdout", "stderr"):
        text = report.output.get(stream, "").strip()
        if text:
            lines.append("")
            lines.append(style(f"the submission wrote to {stream}:", bold=True))
            lines.extend("  | " + printable(line) for line in text.splitlines()[:20])
    lines.append("")
    verdict = ""
    if report.interview:
        verdict = "  interview bar: " + ("passed" if report.interview["passed"] else "not passed") + \
                  f" (core {report.interview['core_score']:.1f} of {report.interview['bar']:.1f} needed)"
    lines.append(style(f"score {report.score:.1f}/{report.max_score:.1f}", bold=True) + f"  [{report.status}]" + verdict)
    return "\n".join(lines)


def _fix_first(report: Report, style: Callable[..., str]) -> list[str]:
    """The root causes, the one to fix first first: what is wrong, where to look, one graph that shows it."""
    if not report.root_causes:
        return []
    lines = ["", style("Fix first", bold=True)]
    for i, cause in enumerate(report.root_causes, 1):
        checks = len(cause["checks"])
        count = f"{checks} failing check{'s' if checks != 1 else ''}" if checks else "an integrity finding"
        lines.append(style(f"  {i}. {cause['name']}", bold=True) + f"  ({count})")
        lines.extend(f"     {line}" for line in _wrap(cause["explanation"]))
        if cause.get("hint"):
            lines.extend(style(f"     {line}", fg="cyan") for line in _wrap("hint: " + cause["hint"]))
        if cause.get("snippet"):
            lines.append(style("     reproduce:", bold=True))
            lines.extend(f"       {printable(line)}" for line in cause["snippet"].splitlines())
    return lines


def _wrap(text: str, width: int = 100) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [""]


def _expand(c: CheckResult, style: Callable[..., str], cause: dict | None = None) -> list[str]:
    out = [f"         {printable(line)}" for line in c.message.splitlines()]
    d = c.details
    if "worst" in d and d["worst"].get("index") is not None:
        w = d["worst"]
        out.append(f"         worst element {w.get('index')}: got {w.get('got')}, expected {w.get('expected')}")
    if "snippet" in d:
        out.append(style("         reproduce:", bold=True))
        out.extend(f"           {printable(line)}" for line in d["snippet"].splitlines())
    if cause is not None:
        out.append(style(f"         likely caused by: {cause['name']} (see Fix first)", fg="magenta"))
    elif "hint" in d:
        out.append(style(f"         hint: {printable(str(d['hint']))}", fg="cyan"))
    return out


def render_markdown(report: Report, colour: bool = False) -> str:
    lines = [f"## Autograd grade: {markdown_inline(report.file)}", "",
             f"**Score {report.score:.1f} / {report.max_score:.1f}** ({report.status}, seed {report.seed})", ""]
    if report.interview:
        lines += [f"Interview bar (core): **{'passed' if report.interview['passed'] else 'not passed'}** "
                  f"({report.interview['core_score']:.1f} of {report.interview['bar']:.1f} needed)", ""]
    lines += [f"Isolation: {report.isolation}" + (f" ({markdown_inline(report.isolation_note)})"
                                                  if report.isolation_note else ""), ""]
    if report.message:
        lines += [f"> {markdown_inline(report.message)}", ""]
    lines += ["| level | check | outcome | points | note |", "|---|---|---|---|---|"]
    for c in report.checks:
        note = markdown_inline(c.message.splitlines()[0][:120]) if c.message else ""
        lines.append(f"| {c.level} | `{c.id}` | {c.outcome} | {c.points:.1f}/{c.max_points:.1f} | {note} |")
    if report.integrity_violations:
        lines += ["", "**Integrity violations:**", *[f"- {markdown_inline(v)}" for v in report.integrity_violations]]
    failures = [c for c in report.checks if c.outcome in ("failed", "error", "timeout") and "snippet" in c.details]
    for c in failures[:5]:
        lines += ["", f"### `{c.id}`", "", markdown_inline(c.message), "", *markdown_fence(c.details["snippet"], "python")]
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[Report, bool], str]] = {
    "text": render_text,
    "json": render_json,
    "markdown": render_markdown,
}
