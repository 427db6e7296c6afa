"""The saved-tensor audit's table, as each format shows it: kept against needed, in bytes, per graph."""

from __future__ import annotations

from typing import Any

from harness.report.model import Report
from harness.report.safety import markdown_inline, printable

__all__ = ["saved_table", "text_lines", "markdown_lines"]


def saved_table(report: Report) -> dict[str, Any] | None:
    """The audit's table from the report's check (None when the check did not run)."""
    return report.saved_tensors()


def _kept(row: dict[str, Any]) -> str:
    parts = [f"{printable(str(k['node']) or 'other')} {k['bytes']} B" for k in row.get("kept", [])]
    return ", ".join(parts) or "nothing"


def text_lines(table: dict[str, Any], full: bool) -> list[str]:
    """The whole table (``full``); else one line when every graph is lean (a failure has its own line)."""
    rows = table.get("rows", [])
    over = [r for r in rows if r.get("excess_bytes")]
    in_place = f"in-place change of a saved tensor: {printable(str(table.get('in_place_text', '')))}"
    if not full:
        if over:
            return []
        return ["", f"saved tensors: each of {len(rows)} graphs keeps only what its backward reads; {in_place}"]
    lines = ["", "saved tensors (kept vs needed between forward and backward; grade explain saved_tensors)",
             f"  {'graph':<26} {'kept':>7} {'needed':>7} {'for nothing':>11}  kept storages"]
    shown = rows if full else over
    for r in shown:
        if r.get("error"):
            lines.append(f"  {printable(r['case']):<26} could not be built: {printable(r['error'])[:60]}")
            continue
        lines.append(f"  {printable(r['case']):<26} {r['kept_bytes']:>5} B {r['needed_bytes']:>5} B "
                     f"{r['excess_bytes']:>9} B  {_kept(r)}")
    if len(shown) < len(rows):
        lines.append(f"  ({len(rows) - len(shown)} more graphs keep only what they need; -v shows the whole table)")
    lines.append(f"  {in_place}")
    return lines


def markdown_lines(table: dict[str, Any]) -> list[str]:
    lines = ["", "### Saved tensors", "",
             "What each graph keeps alive between forward and backward against what its backward reads "
             "(leaves and the output excluded; `grade explain saved_tensors`).", "",
             "| graph | kept (B) | needed (B) | kept for nothing (B) | kept storages | the rule reads |",
             "|---|---:|---:|---:|---|---|"]
    for r in table.get("rows", []):
        kept = "could not be built: " + printable(r["error"]) if r.get("error") else _kept(r)
        lines.append(f"| {markdown_inline(r['case'])} | {r['kept_bytes']} | {r['needed_bytes']} | "
                     f"{r['excess_bytes']} | {markdown_inline(kept)} | {markdown_inline(str(r.get('why', '')))} |")
    lines += ["", f"In-place change of a saved tensor after forward: "
                  f"{markdown_inline(str(table.get('in_place_text', '')))}."]
    return lines
