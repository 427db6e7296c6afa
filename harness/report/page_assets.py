"""The batch page's own style and script: inline, and allowed to run by their hashes only.

The page's Content-Security-Policy (``CSP``) names the SHA-256 of exactly these two texts, so nothing
else on the page (candidate text that escaping missed) could run or restyle it.
"""

from __future__ import annotations

import base64
import hashlib

__all__ = ["STYLE", "SCRIPT", "CSP"]

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 80rem; padding: 0 1rem; color: #1b1b1b;
  overflow-wrap: anywhere; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin-bottom: .3rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #eee; vertical-align: top;
  overflow-wrap: anywhere; }
th { overflow-wrap: normal; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
th[data-key] { cursor: pointer; user-select: none; }
th[aria-sort="ascending"]::after { content: " \\25B2"; } th[aria-sort="descending"]::after { content: " \\25BC"; }
pre { background: #f6f6f6; padding: .5rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.status-graded { color: #1a7f37; } .status-error, .status-timeout { color: #b35900; }
.status-integrity_violation { color: #c00; font-weight: bold; }
.note { color: #666; } .warn { color: #b35900; }
.controls { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; margin: .5rem 0; }
meter { width: 8rem; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg rect.bar { fill: #4a78c2; }
section.candidate, section.pair { border-top: 1px solid #ddd; margin-top: .5rem; }
section.candidate > details > summary, section.pair > details > summary { cursor: pointer; padding: .2rem 0; }
section.candidate h3 { display: inline; margin: 0; }
#candidates { table-layout: fixed; }
#candidates td { padding: .1rem .4rem; }
#candidates th { padding: .25rem .4rem; }
.clip { display: inline-block; max-width: 100%; vertical-align: bottom; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
.why { display: block; color: #b35900; font-size: .9em; }
.cause { white-space: normal; }
.small { display: block; font-size: .85em; color: #666; }
col.c-id { width: 13%; } col.c-status { width: 9%; } col.c-score { width: 9%; } col.c-interview { width: 8%; }
col.c-decision { width: 12%; } col.c-level { width: 6%; } col.c-count { width: 6%; } col.c-seconds { width: 4%; }
svg line.bar-marker { stroke: #c00; stroke-width: 2; stroke-dasharray: 4 3; }
svg text.bar-marker { fill: #c00; }
table.heatmap { table-layout: fixed; }
table.heatmap col.c-name { width: 11rem; }
table.heatmap td { text-align: center; padding: .1rem 0; font-variant-numeric: tabular-nums; font-size: .85em; }
table.heatmap th.concept { writing-mode: vertical-rl; transform: rotate(180deg); font-weight: normal;
  padding: .3rem 0; font-size: .85em; height: 9rem; text-align: left; }
.h0 { background: #f8d7d3; } .h1 { background: #fbe3c8; } .h2 { background: #fdf2c4; }
.h3 { background: #dcefd0; } .h4 { background: #b9e3b0; } .hx { background: #eee; color: #888; }
.sides { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: .5rem; }
.sides pre { margin: .2rem 0; font-size: 12px; line-height: 1.4; }
.sides h4 { margin: .3rem 0 0; }
span.no { display: inline-block; min-width: 2.5em; color: #999; user-select: none; }
mark { color: inherit; display: block; }
mark.m0 { background: #fde2a7; } mark.m1 { background: #c9e4ff; } mark.m2 { background: #d4f0c7; }
mark.m3 { background: #f7cfe4; } mark.m4 { background: #e2d6fb; } mark.m5 { background: #ffd6c2; }
"""

SCRIPT = """
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
    if (want === "decided") { return row.getAttribute("data-decided") === "yes"; }
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


CSP = (f"default-src 'none'; script-src {_csp_hash(SCRIPT)}; style-src {_csp_hash(STYLE)}; "
       "img-src data:; base-uri 'none'; form-action 'none'")
