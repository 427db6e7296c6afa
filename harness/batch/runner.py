"""Running a batch into its output folder: results as they finish, resume, the summaries at the end.

OUTDIR/
  settings.json          what the results were graded with (read by --resume)
  outputs.json           what was written besides them: Gradescope, JUnit, the similarity threshold
  sources/               the files unpacked from a zip (what the results' snippets import)
  results/<id>.json      each submission's JSON report (as ``grade FILE --format json``)
  results/<id>.md        its Markdown write-up
  decisions.json         people's decisions (``grade batch decide``), read by every export
  summary.json, summary.csv, gradebook.csv, report.html, feedback/<id>.md, similarity.json
  gradescope/<id>/results.json   with --gradescope
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from harness import __version__
from harness.batch.collect import CollectedSubmission
from harness.batch.exports import read_outputs, with_regions, write_exports
from harness.batch.grading import Graded, read_source, source_sha256
from harness.batch.similarity import THRESHOLD, similar_pairs
from harness.errors import HarnessError
from harness.grade import GradeOptions
from harness.report.files import write_atomic
from harness.report.gradescope import parse_visibility
from harness.report.model import Report

__all__ = ["Outputs", "Pool", "check_outdir", "run_batch", "settings_record"]


class Pool(Protocol):
    def results(self, submissions: Sequence[CollectedSubmission]) -> Iterator[Graded]: ...
    def ready(self) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Outputs:
    """What to write besides the results and the summaries."""

    gradescope: bool = False
    junit: Path | None = None
    similarity_threshold: float | None = None
    """None: the earlier run's threshold on a resume, else THRESHOLD."""
    visibility: tuple[tuple[str, str], ...] = ()
    """Gradescope visibility rules (``tables.parse_visibility``); none: the earlier run's on a resume."""

    def to_dict(self) -> dict[str, Any]:
        return {"gradescope": self.gradescope, "junit": str(Path(self.junit).absolute()) if self.junit else None,
                "similarity_threshold": self.similarity_threshold,
                "visibility": [f"{pattern}={value}" for pattern, value in self.visibility]}


def resolve_outputs(outdir: Path, asked: Outputs, earlier: bool) -> tuple[Outputs, list[str]]:
    """The outputs of this run, and notes for the interviewer. A resume keeps writing what the earlier
    run wrote (so that no export is left stale, nor misses a submission graded now), and says so;
    a changed setting is said too. Records the outputs in ``outputs.json``."""
    previous = read_outputs(outdir) if earlier else {}
    before_junit = previous.get("junit") if isinstance(previous.get("junit"), str) else None
    before_threshold = previous.get("similarity_threshold")
    if not isinstance(before_threshold, (int, float)) or isinstance(before_threshold, bool):
        before_threshold = None
    try:
        before_visibility = parse_visibility([str(rule) for rule in previous.get("visibility") or []])
    except (ValueError, TypeError):
        before_visibility = ()
    outputs = Outputs(
        visibility=asked.visibility or before_visibility,
        gradescope=asked.gradescope or previous.get("gradescope") is True,
        junit=asked.junit if asked.junit is not None else (Path(before_junit) if before_junit else None),
        similarity_threshold=(asked.similarity_threshold if asked.similarity_threshold is not None
                              else before_threshold if before_threshold is not None else THRESHOLD))
    notes = []
    kept = []
    if outputs.gradescope and not asked.gradescope:
        kept.append("--gradescope")
    if outputs.junit is not None and asked.junit is None:
        kept.append(f"--junit {outputs.junit}")
    if kept:
        notes.append(f"kept the earlier run's outputs ({', '.join(kept)}): written again for the whole cohort")
    changed = []
    if asked.junit is not None and before_junit and str(Path(asked.junit).absolute()) != before_junit:
        changed.append(f"JUnit file {before_junit} -> {Path(asked.junit).absolute()}")
    if asked.gradescope and earlier and previous and previous.get("gradescope") is not True:
        changed.append("Gradescope results added")
    if asked.visibility and earlier and asked.visibility != before_visibility:
        changed.append("Gradescope visibility rules")
    if before_threshold is not None and outputs.similarity_threshold != before_threshold:
        changed.append(f"similarity threshold {before_threshold:g} -> {outputs.similarity_threshold:g}")
    if changed:
        notes.append(f"output settings changed since the earlier run ({'; '.join(changed)}): every summary and "
                     "export is written again for the whole cohort")
    write_atomic(outdir / "outputs.json", json.dumps(outputs.to_dict(), indent=2) + "\n")
    return outputs, notes


@dataclass
class BatchRun:
    """How a run went: every submission's report (graded now or earlier), and what it did not reach."""

    summary: dict[str, Any]
    reports: dict[str, Report]
    reused: list[str] = field(default_factory=list)
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)
    """What the interviewer should know about this run (settings changed since the earlier one)."""


def settings_record(options: GradeOptions, entry: str) -> dict[str, Any]:
    """Everything a result depends on besides its source: the grader's version, the options, and the
    content (not the names) of the rubric and specs used."""
    from harness.grade import spec_paths

    return {
        "grader_version": __version__,
        "level": options.level,
        "seed": options.seed,
        "class_name": options.class_name,
        "max_examples": options.max_examples,
        "time_limit": options.time_limit,
        "memory_mb": options.memory_mb,
        "isolation": options.isolation,
        "entry": entry,
        "rubric_sha256": _digest([options.rubric]) if options.rubric else "default",
        "specs_sha256": _digest(spec_paths(options)),
        "agreements": options.agreements.describe(),
        "variant": options.variant,
    }


def _digest(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for root in paths:
        root = Path(root)
        files = sorted(root.rglob("*")) if root.is_dir() else [root]
        for path in files:
            if path.is_file():
                h.update(str(path.relative_to(root) if root.is_dir() else path.name).encode() + b"\0")
                h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def check_outdir(outdir: Path, resume: bool) -> bool:
    """True when ``outdir`` holds results of an earlier batch; without ``resume`` that is refused
    (HarnessError) rather than mixing them with new ones."""
    results = outdir / "results"
    earlier = (outdir / "settings.json").exists() or (results.is_dir() and any(results.iterdir()))
    if earlier and not resume:
        raise HarnessError(f"{outdir}: already holds batch results (add --resume to continue them, "
                           "or choose another folder)")
    return earlier


def prepare(outdir: Path, settings: Mapping[str, Any], resume: bool,
            only: Sequence[str] = ()) -> tuple[bool, bool, list[str]]:
    """Make the output folder ready: (whether it holds an earlier run, whether its results may be
    reused, notes on what changed).

    Without ``resume``, a folder that already holds batch results is refused rather
    than mixed with new ones. ``only`` (regrade those candidates, keep the rest) needs an earlier
    run graded with the same settings, or the cohort would mix two gradings: refused otherwise,
    before anything is written.
    """
    results = outdir / "results"
    earlier = check_outdir(outdir, resume)
    try:
        previous = json.loads((outdir / "settings.json").read_text()) if earlier else None
    except (OSError, ValueError):
        previous = None
    reusable = previous == dict(settings)
    what = ""
    if earlier and not reusable:
        if isinstance(previous, dict):
            keys = sorted(k for k in {*previous, *settings} if previous.get(k) != settings.get(k))
            what = ", ".join(f"{k} {previous.get(k)} -> {settings.get(k)}" for k in keys)
        else:
            what = "the earlier settings cannot be read"
    if only and not earlier:
        raise HarnessError(f"{outdir}: holds no earlier results: --only regrades candidates of an earlier run "
                           "(run the whole batch first)")
    if only and not reusable:
        raise HarnessError(f"--only keeps the other candidates' results, but the grading settings changed since the "
                           f"earlier run ({what}): run --resume without --only to grade everyone again")
    results.mkdir(parents=True, exist_ok=True)
    notes = []
    if earlier and not reusable:
        notes.append(f"grading settings changed since the earlier run ({what}): every submission is graded again")
    write_atomic(outdir / "settings.json", json.dumps(dict(settings), indent=2) + "\n")
    return earlier, reusable, notes


def reusable_result(outdir: Path, sub: CollectedSubmission, *, changed: bool = False) -> Graded | None:
    """The result of an earlier run for ``sub`` when its source is unchanged (or, with ``changed``, whatever its
    source now), else None."""
    json_path, md_path = outdir / "results" / f"{sub.id}.json", outdir / "results" / f"{sub.id}.md"
    try:
        data = json.loads(json_path.read_text())
        markdown = md_path.read_text()
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("grader_version") != __version__:
        return None
    try:
        report = Report.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # not a report this grader wrote: graded again
    if not changed and (report.file != sub.origin or report.source_sha256 != source_sha256(sub.path)):
        return None
    return Graded(sub.id, report, markdown)


def write_result(outdir: Path, graded: Graded) -> None:
    """Write one submission's results: the Markdown first, the JSON last (a resume trusts a JSON only
    with its Markdown beside it)."""
    write_atomic(outdir / "results" / f"{graded.id}.md", graded.markdown)
    write_atomic(outdir / "results" / f"{graded.id}.json", graded.json())


def run_batch(submissions: Sequence[CollectedSubmission], pool: Pool, outdir: Path, settings: Mapping[str, Any], *,
              resume: bool = False, outputs: Outputs = Outputs(), only: Sequence[str] = (),
              on_result: Callable[[str, Report], None] = lambda sid, report: None,
              on_reused: Callable[[int], None] = lambda count: None) -> BatchRun:
    """Grade ``submissions`` with ``pool`` into ``outdir`` and write the summaries.

    Each result is written as soon as it finishes (``on_result`` hears of it; ``on_reused``
    of how many earlier results were kept). With ``only`` (ids; needs ``resume``), just those
    are graded again and every other candidate keeps its earlier result as it is (a candidate
    without one stays pending). A KeyboardInterrupt stops the grading; the results finished so
    far are kept and summarised (``complete`` false, the rest listed as ``pending``) before it
    is raised again.
    """
    outdir = Path(outdir)
    known = {sub.id for sub in submissions}
    unknown = [sid for sid in only if sid not in known]
    if unknown:
        raise HarnessError(f"--only {unknown[0]}: no such candidate in the batch (candidates: "
                           f"{', '.join(sorted(known)[:20])}{', ...' if len(known) > 20 else ''})")
    earlier, reuse, notes = prepare(outdir, settings, resume, only)
    outputs, output_notes = resolve_outputs(outdir, outputs, earlier)
    notes += output_notes
    finished: dict[str, Graded] = {}
    reused = []
    stale = []
    if reuse:
        for sub in submissions:
            if sub.id in only:
                continue
            kept = reusable_result(outdir, sub)
            if kept is None and only:
                kept = reusable_result(outdir, sub, changed=True)
                if kept is not None:
                    stale.append(sub.id)
            if kept is not None:
                finished[sub.id] = kept
                reused.append(sub.id)
    todo = [sub for sub in submissions if sub.id not in finished and (not only or sub.id in only)]
    if stale:
        notes.append(f"kept the earlier results of {', '.join(stale)} though their source changed since (--only): "
                     "run --resume without --only to grade them again")
    on_reused(len(reused))
    interrupted = False
    try:
        with contextlib.closing(pool.results(todo)) as stream:
            for graded in stream:
                write_result(outdir, graded)
                finished[graded.id] = graded
                on_result(graded.id, graded.report)
    except KeyboardInterrupt:
        interrupted = True
    run = write_summaries(submissions, finished, outdir, settings, outputs)
    run.reused, run.interrupted, run.notes = reused, interrupted, notes
    if interrupted:
        raise BatchInterrupted(run)
    return run


class BatchInterrupted(KeyboardInterrupt):
    """A batch stopped by Ctrl-C, after its finished results and summaries were written."""

    def __init__(self, run: BatchRun) -> None:
        super().__init__()
        self.run = run


def write_summaries(submissions: Sequence[CollectedSubmission], finished: Mapping[str, Graded], outdir: Path,
                    settings: Mapping[str, Any], outputs: Outputs) -> BatchRun:
    """Every export of the cohort (``exports.write_exports``): the summaries, the page, the gradebook, the
    candidates' feedback, and the optional JUnit and Gradescope files."""
    reports = {sub.id: finished[sub.id].report for sub in submissions if sub.id in finished}
    pending = [sub.id for sub in submissions if sub.id not in finished]
    sources = {}
    for sub in submissions:
        if sub.id in finished and sub.path is not None:
            data = read_source(sub.path)
            if data is not None:
                sources[sub.id] = data.decode("utf-8", errors="replace")
    pairs = similar_pairs(sources, THRESHOLD if outputs.similarity_threshold is None
                          else outputs.similarity_threshold)
    summary = write_exports(outdir, reports, settings=settings, pairs=with_regions(pairs, sources), sources=sources,
                            pending=pending, gradescope=outputs.gradescope, junit=outputs.junit,
                            visibility=outputs.visibility)
    return BatchRun(summary, reports)
