"""``grade batch decide OUT NAME``: a person's decision about one candidate of a graded batch.

The decision goes into ``OUT/decisions.json`` (when, by whom, for which source, over which automatic
score), and every export of the batch is written again at once, so the summaries, the gradebook, the
page, the Gradescope results and the candidates' feedback all show it. The grader's own results are
never changed.
"""

from __future__ import annotations

import difflib
import getpass
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from harness.errors import HarnessError

__all__ = ["decide"]


@click.command("decide", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("outdir", metavar="OUT", type=click.Path(file_okay=False, path_type=Path))
@click.argument("name")
@click.option("--accept-review", is_flag=True,
              help="The integrity review entries were read: the interview bar follows the score.")
@click.option("--score", type=click.FloatRange(0), help="Set the final score by hand (needs --because).")
@click.option("--because", metavar="TEXT", help="Why the score (or the bar) is set by hand.")
@click.option("--bar", type=click.Choice(("passed", "not-passed")),
              help="Decide the interview bar by hand (needs --because).")
@click.option("--comment", metavar="TEXT", help="A comment for the interviewers ('' removes it).")
@click.option("--by", metavar="NAME", help="Who decides (default: your login name).")
@click.option("--clear", is_flag=True, help="Take the decision back (it stays in the history).")
def decide(outdir: Path, name: str, accept_review: bool, score: float | None, because: str | None,
           bar: str | None, comment: str | None, by: str | None, clear: bool) -> None:
    """Record a person's decision about the candidate NAME of the batch in OUT, and write every export again.

    \b
      grade batch decide results/ bob --score 40 --because "explained the fix aloud"
      grade batch decide results/ cleo --accept-review --comment "threads only in a test helper"
      grade batch decide results/ dan --bar passed --because "the panel's call"
    """
    from harness.batch.decisions import MAX_SHORT, MAX_TEXT, cleared, load_decisions, record
    from harness.batch.exports import rewrite_exports
    from harness.report.decisions import decided

    change: dict[str, Any] = {}
    if clear:
        if any(v is not None for v in (score, because, bar, comment)) or accept_review:
            _fail("--clear takes the decision back: give it alone")
        change = cleared()
    if score is not None or bar is not None:
        if not (because or "").strip():
            _fail(f"{'--score' if score is not None else '--bar'} needs --because: why it is set by hand")
    elif because is not None and not accept_review:
        _fail("--because gives the reason for --score, --bar or --accept-review")
    for option, text, limit in (("--because", because, MAX_TEXT), ("--comment", comment, MAX_TEXT),
                                ("--by", by, MAX_SHORT)):
        if text is not None and len(text) > limit:
            _fail(f"{option}: {len(text):,} characters, more than {limit:,}")
    if not clear and score is None and bar is None and comment is None and not accept_review:
        _fail("nothing to record: give --score with --because, --accept-review, --bar, --comment or --clear")
    if score is not None:
        change.update(score=score, because=because.strip())
    if bar is not None:
        change.update(bar=bar == "passed", because=because.strip())
    if accept_review:
        change["accept_review"] = True
        if because is not None and score is None and bar is None:
            change["because"] = because.strip()
    if comment is not None:
        change["comment"] = comment.strip()

    try:
        report = _report(outdir, name)
        earlier = load_decisions(outdir).get(name)
    except HarnessError as exc:
        _fail(str(exc))
    if score is not None and score > report.max_score + 1e-9:
        _fail(f"--score {score:g}: more than the maximum of {report.max_score:g}")
    same = earlier is not None and earlier.source_sha256 == report.source_sha256
    if accept_review and not report.integrity_review:
        _fail(f"{name} has no integrity review entries to accept")
    if bar is not None:
        if report.interview is None:
            _fail("the batch did not grade the core level: there is no interview bar to decide")
        if report.integrity_review and not accept_review and not (same and earlier.accept_review):
            _fail(f"{name} has integrity review entries nobody has accepted: read them, then add --accept-review")
    base = {"decided_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "by": by or _login(),
            "source_sha256": report.source_sha256, "automatic_score": round(report.score, 2),
            "max_score": round(report.max_score, 2)}
    try:
        decision = record(outdir, name, change, base=base)
        rewrite_exports(outdir)
    except HarnessError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"{exc.filename or outdir}: cannot write: {exc.strerror or exc}")
    final = decided(report, decision)
    said = final.describe() or "no decision (taken back)"
    if final.comment:
        said += f"; comment: {final.comment}"
    click.echo(f"{name}: {said}")
    verdict = "" if final.interview_passed is None else \
        f", interview bar {'passed' if final.interview_passed else 'not passed'}"
    click.echo(f"final score {final.final_score:.1f} of {report.max_score:.1f}{verdict}; every export in {outdir} "
               "written again")


def _report(outdir: Path, name: str):
    """The report of candidate ``name`` in the batch folder ``outdir`` (HarnessError naming what is missing)."""
    from harness.report.model import Report

    if not (outdir / "summary.json").is_file() or not (outdir / "results").is_dir():
        raise HarnessError(f"{outdir}: not the output folder of a batch (no summary.json and results/ in it)")
    try:
        ids = [str(row["id"]) for row in json.loads((outdir / "summary.json").read_text())["submissions"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HarnessError(f"{outdir / 'summary.json'}: cannot be read as a batch's summary ({exc})") from None
    if name not in ids:
        near = difflib.get_close_matches(name, ids, n=1)
        hint = f"did you mean {near[0]}? " if near else ""
        shown = ", ".join(sorted(ids)[:20]) + (", ..." if len(ids) > 20 else "")
        raise HarnessError(f"no candidate {name!r} in {outdir} ({hint}candidates: {shown})")
    path = outdir / "results" / f"{name}.json"
    try:
        return Report.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HarnessError(f"{path}: cannot be read as a report ({exc})") from None


def _login() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)
