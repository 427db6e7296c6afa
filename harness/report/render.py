"""Renderers: a Report in, a string out. They format; they never score."""

from __future__ import annotations

import json
from typing import Callable

import click

from harness.ops import LEVELS
from harness.report.model import CheckResult, Report

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

    lines = [style(f"grade {report.file}", bold=True) + f"  (seed {report.seed})"]
    if report.status in ("error", "timeout"):
        lines.append(style(f"could not be graded ({report.status}): {report.message}", fg="red"))
    lines.extend(_review_block(report, style))
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
                lines.extend(_expand(c, style))
            elif c.outcome in ("not_attempted", "skipped") and c.message:
                lines.append(style(f"         {c.message}", fg="bright_black"))
    if report.integrity_violations:
        lines.append("")
        lines.append(style("integrity violations (the score is 0):", fg="red", bold=True))
        lines.extend(f"  - {v}" for v in report.integrity_violations)
    for stream in ("stdout", "stderr"):
        text = report.output.get(stream, "").strip()
        if text:
            lines.append("")
            lines.append(style(f"the submission wrote to {stream}:", bold=True))
            lines.extend("  | " + line for line in text.splitlines()[:20])
    lines.append("")
    verdict = ""
    if report.interview:
        verdict = "  interview bar: " + ("passed" if report.interview["passed"] else "not passed") + \
                  f" (core {report.interview['core_score']:.1f} of {report.interview['bar']:.1f} needed)"
    lines.append(style(f"score {report.score:.1f}/{report.max_score:.1f}", bold=True) + f"  [{report.status}]" + verdict)
    return "\n".join(lines)


def _review_block(report: Report, style: Callable[..., str]) -> list[str]:
    """The integrity review list, shown before any check: a person must read these lines."""
    if not report.integrity_review:
        return []
    lines = ["", style("integrity review: a person must read these lines before the interview bar can pass",
                       fg="yellow", bold=True)]
    for entry in report.integrity_review:
        where = f"line {entry['line']}" if entry.get("line") else "at run time"
        lines.append(f"  - {where}: {entry['construct']}")
        lines.append(style(f"      {entry['why']}", fg="bright_black"))
    return lines


def _expand(c: CheckResult, style: Callable[..., str]) -> list[str]:
    out = [f"         {line}" for line in c.message.splitlines()]
    d = c.details
    if "worst" in d and d["worst"].get("index") is not None:
        w = d["worst"]
        out.append(f"         worst element {w.get('index')}: got {w.get('got')}, expected {w.get('expected')}")
    if "snippet" in d:
        out.append(style("         reproduce:", bold=True))
        out.extend(f"           {line}" for line in d["snippet"].splitlines())
    if "diagnosis" in d:
        out.append(style(f"         diagnosis: {d['diagnosis']}", fg="magenta"))
    if "hint" in d:
        out.append(style(f"         hint: {d['hint']}", fg="cyan"))
    return out


def render_markdown(report: Report, colour: bool = False) -> str:
    lines = [f"## Autograd grade: `{report.file}`", "",
             f"**Score {report.score:.1f} / {report.max_score:.1f}** ({report.status}, seed {report.seed})", ""]
    if report.interview:
        lines += [f"Interview bar (core): **{'passed' if report.interview['passed'] else 'not passed'}** "
                  f"({report.interview['core_score']:.1f} of {report.interview['bar']:.1f} needed)", ""]
    if report.message:
        lines += [f"> {report.message}", ""]
    lines += ["| level | check | outcome | points | note |", "|---|---|---|---|---|"]
    for c in report.checks:
        note = c.message.replace("|", "\\|").splitlines()[0][:120] if c.message else ""
        lines.append(f"| {c.level} | `{c.id}` | {c.outcome} | {c.points:.1f}/{c.max_points:.1f} | {note} |")
    if report.integrity_violations:
        lines += ["", "**Integrity violations:**", *[f"- {v}" for v in report.integrity_violations]]
    failures = [c for c in report.checks if c.outcome in ("failed", "error", "timeout") and "snippet" in c.details]
    for c in failures[:5]:
        lines += ["", f"### `{c.id}`", "", c.message, "", "```python", c.details["snippet"], "```"]
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[Report, bool], str]] = {
    "text": render_text,
    "json": render_json,
    "markdown": render_markdown,
}
