"""A batch as one self-contained HTML page for interviewers: opens offline, from a file, in any browser.

The page holds a sortable, filterable table of candidates, a histogram of scores,
pass rates per concept, similar pairs, and per candidate the root causes, failing
checks with their snippets, integrity findings and captured output.

Every piece of text is escaped where it is written (candidate text included:
messages, snippets, output, file names); the page carries a Content-Security-Policy
that lets only its own script and style run, so markup that got through anyway
could still not execute.
"""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Any, Mapping, Sequence

from harness import __version__
from harness.report.model import Report
from harness.report.safety import printable
from harness.vocabulary import FAILING, LEVELS

__all__ = ["render_html"]

_BINS = 10
_OUTPUT_LINES = 40

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1b1b1b; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin-bottom: .3rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #eee; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
th[data-key] { cursor: pointer; user-select: none; white-space: nowrap; }
th[aria-sort="ascending"]::after { content: " \\25B2"; } th[aria-sort="descending"]::after { content: " \\25BC"; }
pre { background: #f6f6f6; padding: .5rem; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
.status-graded { color: #1a7f37; } .status-error, .status-timeout { color: #b35900; }
.status-integrity_violation { color: #c00; font-weight: bold; }
.note { color: #666; } .warn { color: #b35900; }
.controls { display: flex; gap: 1rem; align-items: center; margin: .5rem 0; }
meter { width: 10rem; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg rect.bar { fill: #4a78c2; }
section.candidate { border-top: 1px solid #ddd; margin-top: .5rem; }
section.candidate > details > summary { cursor: pointer; padding: .2rem 0; }
section.candidate h3 { display: inline; margin: 0; }
#candidates td { padding: .1rem .5rem; white-space: nowrap; }
#candidates td.why { white-space: normal; color: #b35900; max-width: 28rem; }
svg line.bar-marker { stroke: #c00; stroke-width: 2; stroke-dasharray: 4 3; }
svg text.bar-marker { fill: #c00; }
div.scroll { overflow-x: auto; }
table.heatmap { width: auto; }
table.heatmap td { text-align: center; padding: .1rem .3rem; font-variant-numeric: tabular-nums; }
table.heatmap th.concept { writing-mode: vertical-rl; transform: rotate(180deg); font-weight: normal; }
.h0 { background: #f8d7d3; } .h1 { background: #fbe3c8; } .h2 { background: #fdf2c4; }
.h3 { background: #dcefd0; } .h4 { background: #b9e3b0; } .hx { background: #eee; color: #888; }
"""

_SCRIPT = """
(function () {
  "use strict";
  var table = document.getElementById("candidates");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var filter = document.getElementById("filter");
  var status = document.getElementById("status-filter");
  var shown = document.getElementById("shown");
  function matches(row) {
    var query = filter.value.trim().toLowerCase();
    var want = status.value;
    if (query && row.getAttribute("data-search").indexOf(query) < 0) { return false; }
    if (want === "interview-passed") { return row.getAttribute("data-interview") === "yes"; }
    if (want === "needs-review") { return row.getAttribute("data-review") === "yes"; }
    return !want || row.getAttribute("data-status") === want;
  }
  var bars = Array.prototype.slice.call(document.querySelectorAll("#histogram rect.bar"));
  var labels = Array.prototype.slice.call(document.querySelectorAll("#histogram text.count"));
  var graded = document.getElementById("histogram-graded");
  function histogram(visible) {
    var bins = bars.map(function () { return 0; });
    var total = 0;
    visible.forEach(function (row) {
      var share = row.getAttribute("data-share");
      if (row.getAttribute("data-status") !== "graded" || share === null) { return; }
      bins[Math.min(bins.length - 1, Math.floor(parseFloat(share) * bins.length + 1e-9))] += 1;
      total += 1;
    });
    var top = Math.max.apply(null, bins.concat([1]));
    var height = parseFloat(bars[0].getAttribute("data-height"));
    bars.forEach(function (bar, i) {
      var h = Math.round(height * bins[i] / top);
      bar.setAttribute("y", String(height - h));
      bar.setAttribute("height", String(h));
      bar.setAttribute("data-count", String(bins[i]));
      labels[i].setAttribute("y", String(height - h - 3));
      labels[i].textContent = bins[i] ? String(bins[i]) : "";
    });
    graded.textContent = String(total);
  }
  function apply() {
    var visible = [];
    rows.forEach(function (row) { var ok = matches(row); row.hidden = !ok; if (ok) { visible.push(row); } });
    shown.textContent = visible.length + " of " + rows.length + " shown";
    histogram(visible);
  }
  function openTarget() {
    var target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
    var details = target ? target.querySelector("details") : null;
    if (details) { details.open = true; }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
  function key(row, index, numeric) {
    var value = row.cells[index].getAttribute("data-value");
    if (value === null) { value = row.cells[index].textContent; }
    if (!numeric) { return value.toLowerCase(); }
    var number = parseFloat(value);
    return isNaN(number) ? -Infinity : number;
  }
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  headers.forEach(function (th, index) {
    if (!th.hasAttribute("data-key")) { return; }
    th.addEventListener("click", function () {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      var numeric = th.getAttribute("data-type") === "num";
      headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      rows.sort(function (a, b) {
        var x = key(a, index, numeric), y = key(b, index, numeric);
        var order = x < y ? -1 : x > y ? 1 : 0;
        if (order === 0) { order = key(a, 0, false) < key(b, 0, false) ? -1 : 1; return order; }
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  filter.addEventListener("input", apply);
  status.addEventListener("change", apply);
  apply();
})();
"""


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


_CSP = (f"default-src 'none'; script-src {_csp_hash(_SCRIPT)}; style-src {_csp_hash(_STYLE)}; "
        "img-src data:; base-uri 'none'; form-action 'none'")


def e(value: Any) -> str:
    """Escaped text, for an element's content or a quoted attribute: markup and control characters alike."""
    return html.escape(printable(str(value)), quote=True)


def render_html(summary: Mapping[str, Any], reports: Mapping[str, Report]) -> str:
    """The batch page from the summary (``tables.summarise``) and the reports by id."""
    rows = summary["submissions"]
    settings = summary.get("settings", {})
    counts = summary["counts"]
    parts = [
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{e(_CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Autograd grades</title>", f"<style>{_STYLE}</style>", "</head>", "<body>",
        "<h1>Autograd grades</h1>",
        f'<p class="note">{counts["total"]} submissions; grader {e(settings.get("grader_version", __version__))}, '
        f'level {e(settings.get("level", "all"))}, seed {e(settings.get("seed", 0))}.</p>',
        "<p>" + ", ".join([
            f'{counts["interview_passed"]} passed the interview bar',
            f'{counts["needs_review"]} need a person to review their code',
            f'{counts["integrity_violation"]} integrity violations',
            f'{counts["error"] + counts["timeout"]} could not be graded',
        ]) + ".</p>",
    ]
    if summary.get("pending"):
        parts.append(f'<p class="warn">Interrupted: {len(summary["pending"])} submissions were not graded '
                     f'({e(", ".join(summary["pending"][:20]))}{" ..." if len(summary["pending"]) > 20 else ""}). '
                     "Run the batch again with --resume to finish.</p>")
    parts += _candidates_table(rows, reports)
    parts += _histogram(rows, _bar_share(reports))
    parts += _concepts(summary.get("concepts", {}))
    parts += _heatmap(rows, summary.get("maximum", {}).get("concepts", {}), summary.get("concepts", {}))
    parts += _common_causes(rows, reports)
    parts += _similarity(summary.get("similarity", []))
    parts.append("<h2>Candidates in detail</h2>")
    for row in rows:
        parts += _candidate(row, reports[row["id"]])
    parts += [f"<script>{_SCRIPT}</script>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _candidates_table(rows: Sequence[Mapping[str, Any]], reports: Mapping[str, Report]) -> list[str]:
    levels = [level for level in LEVELS if any(level in r["levels"] for r in rows)]
    statuses = sorted({r["status"] for r in rows})
    out = [
        "<h2>Candidates</h2>",
        '<div class="controls">',
        '<label>Filter <input id="filter" type="search" placeholder="id, status, root cause..."></label>',
        '<label>Show <select id="status-filter"><option value="">all</option>'
        '<option value="interview-passed">interview bar passed</option>'
        '<option value="needs-review">needs review</option>'
        + "".join(f'<option value="{e(s)}">{e(s)}</option>' for s in statuses) + "</select></label>",
        '<span id="shown" class="note"></span>', "</div>",
        '<table id="candidates"><thead><tr>',
        '<th data-key="id">candidate</th><th data-key="status">status</th>',
        '<th data-key="score" data-type="num" class="num">score</th>',
        '<th data-key="interview">interview</th>',
        *(f'<th data-key="{e(level)}" data-type="num" class="num">{e(level)}</th>' for level in levels),
        '<th data-key="failed" data-type="num" class="num">failed checks</th>',
        '<th data-key="review" data-type="num" class="num">review flags</th>',
        '<th data-key="causes">root causes</th>',
        '<th data-key="seconds" data-type="num" class="num">seconds</th>',
        "</tr></thead><tbody>",
    ]
    for r in rows:
        interview = "passed" if r["interview_passed"] else ("not passed" if r["interview_passed"] is False else "")
        if r["needs_review"] or r["review_flags"]:
            interview += " (review)"
        why = _reason(r)
        search = " ".join([r["id"], r["status"], r["file"], *r["root_causes"], interview, why]).lower()
        share = f' data-share="{r["score"] / r["max_score"]:.6f}"' if r["max_score"] else ""
        causes = f'<td class="why">{e(why)}</td>' if why else f'<td>{e(_cause_ids(reports[r["id"]]))}</td>'

        out.append(
            f'<tr data-status="{e(r["status"])}" data-interview="{"yes" if r["interview_passed"] else "no"}" '
            f'data-review="{"yes" if (r["needs_review"] or r["review_flags"]) else "no"}"{share} '
            f'data-search="{e(search)}">'
            f'<td data-value="{e(r["id"])}"><a href="#c-{e(r["id"])}">{e(r["id"])}</a></td>'
            f'<td class="status-{e(r["status"])}">{e(r["status"])}</td>'
            f'<td class="num" data-value="{r["score"]}">{points(r["score"])} / {points(r["max_score"])}</td>'
            f"<td>{e(interview)}</td>"
            + "".join(f'<td class="num" data-value="{r["levels"].get(level, "")}">{_num(r["levels"].get(level))}</td>'
                      for level in levels)
            + f'<td class="num">{r["checks_failed"]}</td><td class="num">{r["review_flags"]}</td>'
            + causes
            + f'<td class="num" data-value="{r["seconds"]}">{r["seconds"]:.1f}</td></tr>'
        )
    out.append("</tbody></table>")
    return out


def _cause_ids(report: Report) -> str:
    """The root causes in a table cell: catalogued bugs by their ids, the rest counted."""
    causes = report.root_causes
    ids = [str(c.bug) for c in causes if c.bug]
    others = len(causes) - len(ids)
    return ", ".join(ids + ([f"{others} unexplained"] if others else []))


def _reason(row: Mapping[str, Any]) -> str:
    """Why a row was not graded, in one line: its message, or for a violation that it is one."""
    if row["status"] == "graded":
        return ""
    first = str(row.get("message") or "").strip().splitlines()
    if first:
        return first[0] if len(first[0]) <= 160 else first[0][:157] + "..."
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
        bins[min(_BINS - 1, int(r["score"] / r["max_score"] * _BINS + 1e-9))] += 1
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
    """Candidates x concepts: the share of each concept's points each graded candidate earned."""
    concepts = [c for c in rates if maximum.get(c)] + sorted(c for c in maximum if c not in rates and maximum[c])
    graded = [r for r in rows if r["status"] == "graded"]
    if not concepts or not graded:
        return []
    out = ["<h2>Candidates by concept</h2>",
           '<p class="note">The share of each concept\'s points each graded candidate earned, the concepts the '
           "cohort misses most first.</p>",
           '<div class="scroll"><table class="heatmap" id="heatmap"><thead><tr><th>candidate</th>'
           + "".join(f'<th class="concept">{e(c)}</th>' for c in concepts) + "</tr></thead><tbody>"]
    for r in graded:
        cells = []
        for c in concepts:
            got = r["concepts"].get(c)
            if got is None:
                cells.append('<td class="hx" title="not graded">-</td>')
                continue
            share = got / maximum[c]
            cells.append(f'<td class="h{min(4, int(share * 5))}" data-share="{share:.3f}" '
                         f'title="{e(c)}: {points(got)} of {points(maximum[c])}">{share * 100:.0f}</td>')
        out.append(f'<tr><td><a href="#c-{e(r["id"])}">{e(r["id"])}</a></td>{"".join(cells)}</tr>')
    out.append("</tbody></table></div>")
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
    out += ['<p class="note">Per concept, the graded candidates who passed every one of its checks '
            "(a check not attempted counts as missed); the concepts the cohort misses most come first.</p>",
            '<table id="concepts"><thead><tr><th>concept</th><th class="num">candidates passing</th>'
            '<th>rate</th><th class="num">checks passed</th></tr></thead><tbody>']
    for concept, r in rates.items():
        out.append(f'<tr><td>{e(concept)}</td><td class="num">{r["all_passed"]} / {r["candidates"]}</td>'
                   f'<td><meter min="0" max="1" value="{r["pass_rate"]}"></meter> {r["pass_rate"] * 100:.0f}%</td>'
                   f'<td class="num">{r["check_pass_rate"] * 100:.0f}%</td></tr>')
    out.append("</tbody></table>")
    return out


def _similarity(pairs: Sequence[Mapping[str, Any]]) -> list[str]:
    out = ["<h2>Similar submissions</h2>"]
    if not pairs:
        return out + ['<p class="note">No pair of submissions is alike beyond the threshold.</p>']
    out += ['<p class="note">Alike after names, comments, strings, layout and dead code are set aside, and the '
            "template left out: the share of the smaller submission's fingerprints (winnowed token sequences) "
            "that the other holds too. "
            "A lead for a conversation, not a verdict.</p>",
            '<table id="similarity"><thead><tr><th>candidate</th><th>candidate</th><th class="num">score</th>'
            "</tr></thead><tbody>"]
    for p in pairs:
        out.append(f'<tr><td><a href="#c-{e(p["a"])}">{e(p["a"])}</a></td>'
                   f'<td><a href="#c-{e(p["b"])}">{e(p["b"])}</a></td><td class="num">{p["score"]:.2f}</td></tr>')
    out.append("</tbody></table>")
    return out


def _candidate(row: Mapping[str, Any], report: Report) -> list[str]:
    why = _reason(row)
    out = [f'<section class="candidate" id="c-{e(row["id"])}">',
           f'<details><summary><h3>{e(row["id"])}</h3> <span class="status-{e(report.status)}">'
           f'{e(report.status)}</span>, score {points(round(report.score, 2))} / {points(round(report.max_score, 2))}'
           + (f' <span class="warn">{e(why)}</span>' if why else "") + "</summary>",
           f'<p>file <code>{e(report.file)}</code>; '
           f'SHA-256 <code>{e(report.source_sha256)}</code>; isolation {e(report.isolation)}'
           + (f'; {e(report.source_note)}' if report.source_note else "") + "</p>"]
    if report.message:
        out.append(f"<pre>{e(report.message)}</pre>")
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
            out.append(f'<details><summary><code>{e(c.id)}</code> {e(c.outcome)}: {e(c.title)}</summary>')
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
