"""Every file a batch writes about its cohort, from what its output folder holds: written at the end of a
run, and again, all at once, whenever a person records a decision (``grade batch decide``).

summary.json, summary.csv, gradebook.csv, report.html   the cohort (``report.formats.BATCH_FORMATS``)
feedback/<id>.md                                          what each candidate may read (no hidden case)
gradescope/<id>/results.json, the JUnit file              when the batch was asked for them (outputs.json)
similarity.json                                           the sources of similar pairs, for the page's views

A decision applies to every one of them alike (``report.decisions``): they are drawn from one
summary, made from the reports and ``decisions.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.batch.decisions import load_decisions
from harness.batch.similarity import code_of, matched_regions
from harness.errors import HarnessError
from harness.report.cohort import Cohort
from harness.report.decisions import decided
from harness.report.feedback import render_feedback
from harness.report.files import write_atomic
from harness.report.formats import BATCH_FORMATS
from harness.report.gradescope import gradescope_results, parse_visibility
from harness.report.model import Report
from harness.report.pair_views import MAX_VIEWS
from harness.report.summary import summarise

__all__ = ["write_exports", "rewrite_exports", "with_regions", "read_outputs", "SOURCES_FILE"]

SOURCES_FILE = "similarity.json"


def with_regions(pairs: Sequence[Mapping[str, Any]], sources: Mapping[str, str]) -> list[dict[str, Any]]:
    """The pairs, the first ``MAX_VIEWS`` of them (the most alike) with the line spans their sources share."""
    out = []
    for i, pair in enumerate(pairs):
        pair = dict(pair)
        a, b = str(pair["a"]), str(pair["b"])
        if i < MAX_VIEWS and a in sources and b in sources:
            regions = matched_regions(code_of(sources[a]), code_of(sources[b]))  # a notebook by its code cells
            pair["regions"] = {"a": [list(left) for left, _ in regions], "b": [list(right) for _, right in regions]}
        out.append(pair)
    return out


def write_exports(outdir: Path, reports: Mapping[str, Report], *, settings: Mapping[str, Any],
                  pairs: Sequence[Mapping[str, Any]], sources: Mapping[str, str], pending: Sequence[str] = (),
                  gradescope: bool = False, junit: Path | None = None,
                  visibility: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """Write every export of the cohort ``reports`` (in their order) with the decisions in ``outdir``; return the
    summary. Raises HarnessError for a decisions file that cannot be trusted (before anything is written)."""
    outdir = Path(outdir)
    decisions = load_decisions(outdir)
    summary = summarise(reports, settings=settings, similarity=pairs, pending=pending, decisions=decisions)
    shown = {sid: code_of(text) for sid, text in sources.items()
             if any(sid in (p["a"], p["b"]) for p in pairs[:MAX_VIEWS])}
    write_atomic(outdir / SOURCES_FILE, json.dumps({"sources": shown}, indent=1, ensure_ascii=False) + "\n")
    write_atomic(outdir / "summary.json", json.dumps(summary, indent=2) + "\n")
    cohort = Cohort(summary, reports, shown)
    for fmt in BATCH_FORMATS.values():
        if fmt.file:
            write_atomic(outdir / fmt.file, fmt.render(cohort))
    if junit is not None:
        write_atomic(junit, BATCH_FORMATS["junit"].render(cohort))
    (outdir / "feedback").mkdir(exist_ok=True)
    for sid, report in reports.items():
        final = decided(report, decisions.get(sid))
        write_atomic(outdir / "feedback" / f"{sid}.md", render_feedback(report, final) + "\n")
        if gradescope:
            folder = outdir / "gradescope" / sid
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(folder / "results.json",
                         json.dumps(gradescope_results(report, visibility, final), indent=2) + "\n")
    return summary


def read_outputs(outdir: Path) -> dict[str, Any]:
    """What ``outputs.json`` says the batch writes besides its own files ({} when it cannot be read)."""
    try:
        loaded = json.loads((Path(outdir) / "outputs.json").read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def rewrite_exports(outdir: Path) -> dict[str, Any]:
    """Write every export again from what ``outdir`` holds (its results, summary, sources and decisions), as the
    batch that made them would: the cohort, its order and what was pending are the summary's."""
    outdir = Path(outdir)
    try:
        summary = json.loads((outdir / "summary.json").read_text())
        ids = [str(row["id"]) for row in summary["submissions"]]
        pending = [str(sid) for sid in summary.get("pending") or ()]
        pairs = [dict(p) for p in summary.get("similarity") or ()]
        settings = dict(summary.get("settings") or {})
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HarnessError(f"{outdir / 'summary.json'}: cannot be read as a batch's summary ({exc})") from None
    reports = {}
    for sid in ids:
        path = outdir / "results" / f"{sid}.json"
        try:
            reports[sid] = Report.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise HarnessError(f"{path}: cannot be read as a report ({exc})") from None
    try:
        kept = json.loads((outdir / SOURCES_FILE).read_text()).get("sources") or {}
        sources = {str(k): v for k, v in kept.items() if isinstance(v, str)}
    except (OSError, ValueError, AttributeError):
        sources = {}
    outputs = read_outputs(outdir)
    junit = outputs.get("junit") if isinstance(outputs.get("junit"), str) else None
    try:
        visibility = parse_visibility([str(rule) for rule in outputs.get("visibility") or []])
    except (ValueError, TypeError):
        visibility = ()
    return write_exports(outdir, reports, settings=settings, pairs=pairs, sources=sources, pending=pending,
                         gradescope=outputs.get("gradescope") is True, junit=Path(junit) if junit else None,
                         visibility=visibility)
