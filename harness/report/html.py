"""A batch as one self-contained HTML page for interviewers: opens offline, from a file, in any browser.

The page holds a sortable, filterable table of candidates (with every person's decision), a
histogram of scores, pass rates per concept, similar pairs side by side, and per candidate the
decision and comment, root causes, failing checks with their snippets, integrity findings and
captured output. It fits a window 1,400 pixels wide whatever the cohort: the tables lay out
within the page, long text wraps, and a long name or reason is cut with the whole of it on hover.

Every piece of text is escaped where it is written (candidate text included:
messages, snippets, output, file names); the page carries a Content-Security-Policy
that lets only its own script and style run, so markup that got through anyway
could still not execute.
"""

from __future__ import annotations

import html
from typing import Any, Mapping, Sequence

from harness import __version__
from harness.report.cohort import Cohort
from harness.report.model import Report
from harness.report.page_assets import CSP, SCRIPT, STYLE
from harness.report.pair_views import similarity_section
from harness.report.safety import printable
from harness.report.summary import cause_title
from harness.vocabulary import FAILING, LEVELS

__all__ = ["render_html"]

_BINS = 10
_OUTPUT_LINES = 40

def e(value: Any) -> str:
    """Escaped text, for an element's content or a quoted attribute: markup and control characters alike."""
    return html.escape(printable(str(value)), quote=True)


def render_html(cohort: Cohort) -> str:
    """The batch page from a cohort: the summary (``summary.summarise``), the reports by id, the sources of
    similar pairs."""
    summary, reports = cohort.summary, cohort.reports
    rows = summary["submissions"]
    settings = summary.get("settings", {})
    counts = summary["counts"]
    parts = [
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Autograd grades</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        "<h1>Autograd grades</h1>",
        f'<p class="note">{counts["total"]} submissions; grader {e(settings.get("grader_version", __version__))}, '
        f'level {e(settings.get("level", "all"))}, seed {e(settings.get("seed", 0))}.</p>',
        "<p>" + ", ".join([
            f'{counts["interview_passed"]} passed the interview bar',
            f'{counts["needs_review"]} need a person to review their code',
            f'{counts["integrity_violation"]} integrity violations',
            f'{counts["error"] + counts["timeout"]} could not be graded',
            f'{counts.get("decided", 0)} decided by a person',
        ]) + ".</p>",
    ]
    if counts.get("decisions_outdated"):
        parts.append(f'<p class="warn">{counts["decisions_outdated"]} decisions were made for an older version of '
                     "the candidate's source and are not applied (see the decision column).</p>")
    if summary.get("pending"):
        parts.append(f'<p class="warn">Interrupted: {len(summary["pending"])} submissions were not graded '
                     f'({e(", ".join(summary["pending"][:20]))}{" ..." if len(summary["pending"]) > 20 else ""}). '
                     "Run the batch again with --resume to finish.</p>")
    parts += _candidates_table(rows, reports)
    parts += _histogram(rows, _bar_share(reports))
    parts += _concepts(summary.get("concepts", {}))
    parts += _heatmap(rows, summary.get("maximum", {}).get("concepts", {}), summary.get("concepts", {}))
    parts += _common_causes(rows, reports)
    parts += similarity_section(summary.get("similarity", []), cohort.sources, e)
    parts.append("<h2>Candidates in detail</h2>")
    for row in rows:
        parts += _candidate(row, reports[row["id"]])
    parts += [f"<script>{SCRIPT}</script>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _candidates_table(rows: Sequence[Mapping[str, Any]], reports: Mapping[str, Report]) -> list[str]:
    levels = [level for level in LEVELS if any(level in r["levels"] for r in rows)]
    statuses = sorted({r["status"] for r in rows})
    out = [
        "<h2>Candidates</h2>",
        '<div class="controls">',
        '<label>Filter <input id="filter" type="search" placeholder="id, status, root cause, comment..."></label>',
        '<label>Show <select id="status-filter"><option value="">all</option>'
        '<option value="interview-passed">interview bar passed</option>'
        '<option value="needs-review">needs review</option>'
        '<option value="decided">decided by a person</option>'
        + "".join(f'<option value="{e(s)}">{e(s)}</option>' for s in statuses) + "</select></label>",
        '<span id="shown" class="note"></span>', "</div>",
        '<table id="candidates"><colgroup><col class="c-id"><col class="c-status"><col class="c-score">'
        '<col class="c-interview"><col class="c-decision">' + '<col class="c-level">' * len(levels)
        + '<col class="c-count"><col class="c-count"><col class="c-causes"><col class="c-seconds"></colgroup>',
        "<thead><tr>",
        '<th data-key="id">candidate</th><th data-key="status">status</th>',
        '<th data-key="score" data-type="num" class="num">score</th>',
        '<th data-key="interview">interview</th>',
        '<th data-key="decision">decision</th>',
        *(f'<th data-key="{e(level)}" data-type="num" class="num">{e(level)}</th>' for level in levels),
        '<th data-key="failed" data-type="num" class="num" title="failed checks">failed</th>',
        '<th data-key="review" data-type="num" class="num" title="review flags">review</th>',
        '<th data-key="causes">root causes</th>',
        '<th data-key="seconds" data-type="num" class="num" title="seconds">s</th>',
        "</tr></thead><tbody>",
    ]
    for r in rows:
        interview = "passed" if r["interview_passed"] else ("not passed" if r["interview_passed"] is False else "")
        waits = bool(r["needs_review"] or (r["review_flags"] and not _review_accepted(r)))
        if waits:
            interview += " (review)"
        why = _reason(r)
        decision = r.get("decision") or {}
        titles = r.get("root_cause_titles") or [cause_title(c) for c in reports[r["id"]].root_causes]
        search = " ".join([r["id"], r["status"], r["file"], *r["root_causes"], *titles, interview, why,
                           decision.get("text", ""), r.get("comment", "")]).lower()
        final = r.get("final_score", r["score"])
        share = f' data-share="{final / r["max_score"]:.6f}"' if r["max_score"] else ""
        status = e(r["status"]) + (f'<span class="clip why" title="{e(why)}">{e(why)}</span>' if why else "")
        score = f"{points(final)} / {points(r['max_score'])}"
        if decision.get("applied") and decision.get("score") is not None:
            score += f'<span class="clip small" title="the checks gave {points(r["score"])}">auto ' \
                     f'{points(r["score"])}</span>'
        out.append(
            f'<tr data-status="{e(r["status"])}" data-interview="{"yes" if r["interview_passed"] else "no"}" '
            f'data-review="{"yes" if waits else "no"}" '
            f'data-decided="{"yes" if decision.get("applied") else "no"}"{share} '
            f'data-search="{e(search)}">'
            f'<td data-value="{e(r["id"])}"><a class="clip" href="#c-{e(r["id"])}" title="{e(r["id"])}">'
            f'{e(r["id"])}</a></td>'
            f'<td class="status-{e(r["status"])}" data-value="{e(r["status"])}">{status}</td>'
            f'<td class="num" data-value="{final}">{score}</td>'
            f"<td>{e(interview)}</td>"
            f'<td data-value="{e(decision.get("text", ""))}">{_decision_cell(r)}</td>'
            + "".join(f'<td class="num" data-value="{r["levels"].get(level, "")}">{_num(r["levels"].get(level))}</td>'
                      for level in levels)
            + f'<td class="num">{r["checks_failed"]}</td><td class="num">{r["review_flags"]}</td>'
            + f'<td data-value="{e(", ".join(titles))}">{_causes_cell(reports[r["id"]])}</td>'
            + f'<td class="num" data-value="{r["seconds"]}">{r["seconds"]:.1f}</td></tr>'
        )
    out.append("</tbody></table>")
    return out


def _review_accepted(row: Mapping[str, Any]) -> bool:
    decision = row.get("decision") or {}
    return bool(decision.get("applied") and decision.get("accept_review"))


def _decision_cell(row: Mapping[str, Any]) -> str:
    """The decision in a few words (the whole of it, with the comment, on hover)."""
    decision = row.get("decision")
    if not decision or not decision.get("text"):
        return ""
    if not decision.get("current"):
        short = "older version"
    else:
        bits = []
        if decision.get("score") is not None:
            bits.append("score set")
        if decision.get("bar") is not None:
            bits.append("bar " + ("passed" if decision["bar"] else "not passed"))
        if decision.get("accept_review"):
            bits.append("review read")
        if decision.get("comment"):
            bits.append("comment")
        short = ", ".join(bits)
    whole = decision["text"] + (f" | comment: {decision['comment']}" if decision.get("comment") else "")
    css = "clip" if decision.get("current") else "clip warn"
    return f'<span class="{css}" title="{e(whole)}">{e(short)}</span>'


def _causes_cell(report: Report) -> str:
    """The root causes by their short titles, the one to fix first first (each one's whole name on hover)."""
    return ", ".join(f'<span class="cause" title="{e(str(c.name or c.bug or ""))}'
                     f'{e(f" ({c.bug})") if c.bug else ""}">{e(cause_title(c))}</span>'
                     for c in report.root_causes)


def _reason(row: Mapping[str, Any]) -> str:
    """Why a row was not graded, in one line: its message, or for a violation that it is one."""
    if row["status"] == "graded":
        return ""
    first = str(row.get("message") or "").strip().splitlines()
    if first:
        return first[0]
    if row["status"] == "integrity_violation":
        return f"integrity violation: torch's autograd was used ({row['violations']} finding(s); score 0)"
    return row["status"]


def points(value: Any) -> str:
    """Points as every view of a report shows them: one decimal (the JSON and CSV carry two)."""
    return f"{float(value):.1f}"


def _num(value: Any) -> str:
    return "" if value is None else points(value)


def _bar_share(reports: Mapping[str, Report]) -> float | None:
    """The interview bar as a share of the maximum score, when the batch graded the core level alone
    (otherwise the bar, which reads the core level only, has no place on a histogram of whole scores)."""
    for report in reports.values():
        interview, levels = report.interview, report.levels
        if interview is not None and list(levels) == ["core"] and levels["core"].get("max_score"):
            return float(interview.bar) / float(round(levels["core"]["max_score"], 2))
    return None


def _histogram(rows: Sequence[Mapping[str, Any]], bar_share: float | None = None) -> list[str]:
    """Graded scores as a share of the maximum, in ten bins: an inline SVG that the filter redraws.

    Rows that were not graded (errors, timeouts, violations) are left out: they have no score
    to speak of, and would pile up at 0%.
    """
    bins = [0] * _BINS
    graded = [r for r in rows if r["status"] == "graded" and r["max_score"]]
    for r in graded:
        bins[min(_BINS - 1, int(r.get("final_score", r["score"]) / r["max_score"] * _BINS + 1e-9))] += 1
    top = max(bins) or 1
    width, height, bar, top_margin = 440, 160, 40, 16
    out = ["<h2>Scores</h2>",
           f'<p class="note"><span id="histogram-graded">{len(graded)}</span> graded submissions shown (the '
           "filter above applies); rows not graded are left out.</p>",
           f'<svg id="histogram" role="img" aria-label="histogram of scores" width="{width}" '
           f'height="{top_margin + height + 40}" viewBox="0 {-top_margin} {width} {top_margin + height + 40}">']
    for i, count in enumerate(bins):
        h = round(height * count / top)
        x = i * (bar + 4)
        out.append(f'<rect class="bar" x="{x}" y="{height - h}" width="{bar}" height="{h}" data-count="{count}" '
                   f'data-height="{height}"><title>{i * 10}-{(i + 1) * 10}%</title></rect>')
        out.append(f'<text class="count" x="{x + bar / 2}" y="{height - h - 3}" text-anchor="middle">'
                   f'{count or ""}</text>')
        out.append(f'<text x="{x + bar / 2}" y="{height + 14}" text-anchor="middle">{i * 10}%</text>')
    if bar_share is not None:
        x = round(bar_share * _BINS * (bar + 4), 1)
        out.append(f'<line class="bar-marker" id="interview-bar" x1="{x}" x2="{x}" y1="{-top_margin + 2}" '
                   f'y2="{height}"></line>')
        out.append(f'<text class="bar-marker" x="{x - 3}" y="{-4}" text-anchor="end">'
                   f'interview bar {bar_share * 100:.0f}%</text>')
    out.append(f'<text x="0" y="{height + 32}">share of the maximum score, in bins of 10% '
               "(the last bin includes 100%)</text></svg>")
    return out


def _heatmap(rows: Sequence[Mapping[str, Any]], maximum: Mapping[str, float],
             rates: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Candidates x concepts: the share of each concept's points each graded candidate earned, in the order of
    the concept ranking. The table lays out within the page: a long name is cut, with the whole on hover."""
    concepts = [c for c in rates if maximum.get(c)] + sorted(c for c in maximum if c not in rates and maximum[c])
    graded = [r for r in rows if r["status"] == "graded"]
    if not concepts or not graded:
        return []
    out = ["<h2>Candidates by concept</h2>",
           '<p class="note">The share of each concept\'s points each graded candidate earned, in the order of the '
           "concepts above.</p>",
           '<table class="heatmap" id="heatmap"><colgroup><col class="c-name"></colgroup><thead><tr><th>candidate</th>'
           + "".join(f'<th class="concept" title="{e(c)}">{e(c)}</th>' for c in concepts) + "</tr></thead><tbody>"]
    for r in graded:
        cells = []
        for c in concepts:
            got = r["concepts"].get(c)
            if got is None:
                cells.append('<td class="hx" title="not graded">-</td>')
                continue
            share = got / maximum[c]
            cells.append(f'<td class="h{min(4, int(share * 5))}" data-share="{share:.3f}" '
                         f'title="{e(r["id"])}, {e(c)}: {points(got)} of {points(maximum[c])}">{share * 100:.0f}</td>')
        out.append(f'<tr><td><a class="clip" href="#c-{e(r["id"])}" title="{e(r["id"])}">{e(r["id"])}</a></td>'
                   f'{"".join(cells)}</tr>')
    out.append("</tbody></table>")
    return out


def _common_causes(rows: Sequence[Mapping[str, Any]], reports: Mapping[str, Report]) -> list[str]:
    """The root causes found in most graded candidates: what the cohort gets wrong."""
    found: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r["status"] != "graded":
            continue
        for cause in reports[r["id"]].root_causes:
            key = str(cause.bug or "")
            if not key:
                continue  # a failure no catalogued bug explains is each candidate's own
            entry = found.setdefault(key, {"name": str(cause.name or key), "ids": []})
            entry["ids"].append(r["id"])
    out = ["<h2>Most common root causes</h2>"]
    if not found:
        return out + ['<p class="note">No catalogued bug was found in a graded submission.</p>']
    out += ['<table id="common-causes"><thead><tr><th>bug</th><th>what it is</th><th class="num">candidates</th>'
            "<th>who</th></tr></thead><tbody>"]
    for key, entry in sorted(found.items(), key=lambda kv: (-len(kv[1]["ids"]), kv[0]))[:10]:
        who = ", ".join(f'<a href="#c-{e(sid)}">{e(sid)}</a>' for sid in entry["ids"][:12])
        more = f" and {len(entry['ids']) - 12} more" if len(entry["ids"]) > 12 else ""
        out.append(f'<tr><td><code>{e(key)}</code></td><td>{e(entry["name"])}</td>'
                   f'<td class="num">{len(entry["ids"])}</td><td>{who}{more}</td></tr>')
    out.append("</tbody></table>")
    return out


def _concepts(rates: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = ["<h2>Concepts</h2>"]
    if not rates:
        return out + ['<p class="note">No submission was graded.</p>']
    out += ['<p class="note">Per concept, the graded candidates who attempted it and passed every one of its checks '
            "they attempted (a check not attempted is left out: it says nothing either way). The core concepts come "
            "first, then the follow-ups and the extensions; within each, the ones the cohort misses most.</p>",
            '<table id="concepts"><thead><tr><th>concept</th><th>level</th><th class="num">candidates passing</th>'
            '<th>rate</th><th class="num">checks passed</th></tr></thead><tbody>']
    for concept, r in rates.items():
        attempted = r.get("attempted", r["candidates"])
        if r["pass_rate"] is None:
            rate = '<span class="note">not attempted</span>'
        else:
            rate = f'<meter min="0" max="1" value="{r["pass_rate"]}"></meter> {r["pass_rate"] * 100:.0f}%'
        checks = "" if r.get("check_pass_rate") is None else f'{r["check_pass_rate"] * 100:.0f}%'
        out.append(f'<tr><td>{e(concept)}</td><td>{e(r.get("level", ""))}</td>'
                   f'<td class="num">{r["all_passed"]} / {attempted}</td><td>{rate}</td>'
                   f'<td class="num">{checks}</td></tr>')
    out.append("</tbody></table>")
    return out


def _decision_details(row: Mapping[str, Any]) -> list[str]:
    """A person's decision and the comment."""
    decision = row.get("decision")
    if not decision or not (decision.get("text") or decision.get("comment")):
        return []
    css = "" if decision.get("current") else ' class="warn"'
    out = ["<h4>Decision</h4>", f"<p{css}>{e(decision['text'])}</p>"]
    if decision.get("comment"):
        out.append(f'<p class="comment"><strong>Comment</strong> ({e(decision["by"])}): {e(decision["comment"])}</p>')
    return out


def _set_by_hand(row: Mapping[str, Any]) -> str:
    decision = row.get("decision") or {}
    if not (decision.get("applied") and decision.get("score") is not None):
        return ""
    return f' <span class="note">(set by {e(decision["by"])}; the checks gave {points(row["score"])})</span>'


def _candidate(row: Mapping[str, Any], report: Report) -> list[str]:
    why = _reason(row)
    out = [f'<section class="candidate" id="c-{e(row["id"])}">',
           f'<details><summary><h3>{e(row["id"])}</h3> <span class="status-{e(report.status)}">'
           f'{e(report.status)}</span>, score {points(row.get("final_score", report.score))} / '
           f'{points(round(report.max_score, 2))}' + _set_by_hand(row)
           + (f' <span class="warn">{e(why)}</span>' if why else "") + "</summary>",
           f'<p>file <code>{e(report.file)}</code>; '
           f'SHA-256 <code>{e(report.source_sha256)}</code>; isolation {e(report.isolation)}'
           + (f'; {e(report.source_note)}' if report.source_note else "") + "</p>"]
    if report.message:
        out.append(f"<pre>{e(report.message)}</pre>")
    out += _decision_details(row)
    if report.integrity_violations:
        out += ["<h4>Integrity violations (score 0)</h4>", "<ul>",
                *(f"<li>{e(v)}</li>" for v in report.integrity_violations), "</ul>"]
    if report.integrity_review:
        out += ["<h4>For a person to review</h4>", "<ul>",
                *(f'<li>line {e(entry.line)}: <code>{e(entry.construct)}</code>: '
                  f'{e(entry.why)}</li>' for entry in report.integrity_review), "</ul>"]
    if report.diagnosis_error:
        out.append(f'<p class="note">No root causes: {e(report.diagnosis_error)}. Every verdict and the score '
                   'stand.</p>')
    if report.root_causes:
        out.append("<h4>Root causes (fix the first first)</h4>")
        for cause in report.root_causes:
            out.append(f'<p><strong>{e(cause.title)}</strong>: '
                       f'{e(cause.explanation)}</p>')
            if cause.hint:
                out.append(f'<p class="note">hint: {e(cause.hint)}</p>')
            if cause.checks:
                out.append(f'<p class="note">explains: {e(", ".join(map(str, cause.checks)))}</p>')
            if cause.snippet:
                out.append(f"<pre>{e(cause.snippet)}</pre>")
    failing = [c for c in report.checks if c.outcome in FAILING]
    if failing:
        out.append(f"<h4>Failing checks ({len(failing)})</h4>")
        for c in failing:
            hidden = ' <span class="note">(a hidden case: never shown to the candidate)</span>' if c.hidden else ""
            out.append(f'<details><summary><code>{e(c.id)}</code> {e(c.outcome)}: {e(c.title)}{hidden}</summary>')
            out.append(f"<pre>{e(c.message)}</pre>")
            details = c.details
            worst = details.get("worst") or {}
            if worst.get("index") is not None:
                out.append(f'<p>worst element {e(worst.get("index"))}: got {e(worst.get("got"))}, '
                           f'expected {e(worst.get("expected"))}</p>')
            if details.get("snippet"):
                out.append(f"<pre>{e(details['snippet'])}</pre>")
            if details.get("hint"):
                out.append(f'<p class="note">hint: {e(details["hint"])}</p>')
            if c.diagnosis:
                out.append(f'<p class="note">likely caused by: {e(", ".join(c.diagnosis))}</p>')
            out.append("</details>")
    for stream, text in report.output.items():
        if text and text.strip():
            lines = text.strip().splitlines()
            shown = "\n".join(lines[:_OUTPUT_LINES])
            if len(lines) > _OUTPUT_LINES:
                shown += f"\n[... {len(lines) - _OUTPUT_LINES} more lines ...]"
            out.append(f"<h4>The submission wrote to {e(stream)}</h4><pre>{e(shown)}</pre>")
    out.append("</details></section>")
    return out
