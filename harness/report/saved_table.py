"""The saved-tensor audit's table, as each format shows it: kept against needed, in bytes, per graph."""

from __future__ import annotations

from typing import Any

from harness.report.model import Report
from harness.report.safety import markdown_inline, printable
from harness.terminal import DEFAULT_WIDTH, wrap

__all__ = ["saved_table", "text_lines", "markdown_lines"]


def saved_table(report: Report) -> dict[str, Any] | None:
    """The audit's table from the report's check (None when the check did not run)."""
    return report.saved_tensors()


def _kept_items(row: dict[str, Any]) -> list[str]:
    return [f"{printable(str(k['node']) or 'other')} {k['bytes']} B" for k in row.get("kept", [])]


def _kept(row: dict[str, Any]) -> str:
    return ", ".join(_kept_items(row)) or "nothing"


def _packed(items: list[str], first: str, hanging: str, width: int) -> list[str]:
    """``items`` joined by commas after ``first``, wrapped to ``width`` between items, never inside one."""
    lines, line = [], first
    for n, item in enumerate(items):
        piece = item + ("," if n < len(items) - 1 else "")
        if line.strip() and len(line) + 1 + len(piece) > width and line != first:
            lines.append(line)
            line = hanging + piece
        else:
            line += ("" if line == first else " ") + piece
    return [*lines, line]


def text_lines(table: dict[str, Any], full: bool, width: int = DEFAULT_WIDTH) -> list[str]:
    """The whole table (``full``), ``width`` columns wide; else one line when every graph is lean (a failure
    has its own line)."""
    rows = table.get("rows", [])
    over = [r for r in rows if r.get("excess_bytes")]
    in_place = f"in-place change of a saved tensor: {printable(str(table.get('in_place_text', '')))}"
    if not full:
        if over:
            return []
        return ["", *wrap(f"saved tensors: each of {len(rows)} graphs keeps only what its backward reads; "
                          f"{in_place}", width)]
    lines = ["", *wrap("saved tensors (kept vs needed between forward and backward; grade explain saved_tensors)",
                       width),
             *([] if width < 80 else [f"  {'graph':<26} {'kept':>7} {'needed':>7} {'for nothing':>11}  kept storages"])]
    narrow = width < 80  # the columns do not fit: one wrapped sentence per graph
    for r in rows:
        if narrow:
            what = (f"could not be built: {printable(r['error'])}" if r.get("error") else
                    f"kept {r['kept_bytes']} B, needed {r['needed_bytes']} B, for nothing {r['excess_bytes']} B: "
                    f"{_kept(r)}")
            lines += wrap(f"{printable(r['case'])}: {what}", width, "  ", "    ")
            continue
        if r.get("error"):
            lines += wrap(f"could not be built: {printable(r['error'])}", width, f"  {printable(r['case']):<26} ",
                          " " * 6)
            continue
        figures = f"  {printable(r['case']):<26} {r['kept_bytes']:>5} B {r['needed_bytes']:>5} B " \
                  f"{r['excess_bytes']:>9} B  "
        lines += _packed(_kept_items(r) or ["nothing"], figures, " " * len(figures), width)
    lines += wrap(in_place, width, "  ", "    ")
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
