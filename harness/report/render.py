"""Renderers: a Report in, a string out. They format; they never score.

Text is for the candidate at a terminal (``report.text``: fitted to its width and to one
screen, ``verbose`` for every check). JSON is the published contract (``Report.to_dict``).
Markdown is the interviewer's write-up: the summary, the root causes, a table
of concepts, and the full table of checks folded away. Candidate text is
escaped in every format (``safety``).
"""

from __future__ import annotations

import json

from harness.report.model import Report, RootCause
from harness.report.safety import markdown_code, markdown_fence, markdown_inline, printable
from harness.report.saved_table import markdown_lines, saved_table
from harness.report.text import render_text
from harness.vocabulary import FAILING, LEVELS

__all__ = ["render_text", "render_json", "render_markdown", "concept_table"]


def render_json(report: Report, colour: bool = False, verbose: bool = False) -> str:
    return json.dumps(report.to_dict(), indent=2)


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


def _cause_name(cause: RootCause) -> str:
    return cause.title


def _agreed(report: Report) -> str:
    return ", ".join(f"{printable(str(k))}={printable(str(v))}" for k, v in report.agreements.items())


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
