"""``grade batch PATH -o OUTDIR``: grade a folder (or zip) of submissions for interviewers."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from harness.cli.group import grade_file
from harness.errors import HarnessError

__all__ = ["batch"]

SHARED_OPTIONS = ("level", "seed", "specs", "only_specs", "rubric", "class_name", "max_examples", "time_limit",
                  "memory_mb", "visibility", "agree", "variant")
"""Options of ``grade FILE`` that ``grade batch`` takes as they are (one definition, in harness.cli.group)."""


class _BatchCommand(click.Command):
    """``grade batch PATH -o OUT`` grades; ``grade batch decide OUT NAME ...`` records a person's decision."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        if args and args[0] == "decide":
            from harness.cli.decide import decide

            return decide.make_context(f"{info_name} decide", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


@click.command("batch", cls=_BatchCommand, epilog="Record a person's decision about a candidate (a score set by hand, "
               "review entries read, a comment) with: grade batch decide OUT NAME ... (see grade batch decide --help).")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for the results, summaries and report.html.")
@click.option("-j", "--jobs", type=click.IntRange(1, 64), default=os.cpu_count() or 1, show_default="cores",
              help="Submissions graded at once.")
@click.option("--entry", default="solution.py", show_default=True,
              help="The file graded in each submission folder.")
@click.option("--resume", is_flag=True,
              help="Keep results already in OUTDIR whose source and settings are unchanged; the earlier run's "
                   "exports are written again for the whole cohort.")
@click.option("--allow-basic-isolation", is_flag=True,
              help="Grade even without the bubblewrap sandbox (submissions then run as child processes only).")
@click.option("--gradescope", is_flag=True, help="Also write OUTDIR/gradescope/<id>/results.json.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write JUnit XML to this file.")
@click.option("--similarity", "similarity_threshold", type=click.FloatRange(0, 1), default=None,
              help="Report pairs of submissions at least this alike (0 to 1; default 0.6, or the resumed run's).")
@click.option("--scheduler", metavar="ADDRESS", help="Grade on this Dask distributed scheduler (tcp://host:8786).")
@click.option("--only", "only", multiple=True, metavar="NAME",
              help="With --resume: grade these candidates again (repeatable) and keep every other result as it is.")
def batch(path: Path, outdir: Path, jobs: int, entry: str, resume: bool, allow_basic_isolation: bool,
          gradescope: bool, junit: Path | None, similarity_threshold: float | None, scheduler: str | None,
          only: tuple[str, ...], **grade_options) -> None:
    """Grade every submission in PATH: a folder of .py files, a folder of folders (each graded by its
    --entry file) or a .zip of either. Writes OUTDIR/results/<id>.json and .md, summary.json,
    summary.csv, gradebook.csv, report.html and feedback/<id>.md."""
    from harness.batch.collect import collect
    from harness.batch.decisions import load_decisions
    from harness.batch.runner import BatchInterrupted, Outputs, check_outdir, run_batch, settings_record
    from harness.cli.group import visibility_rules
    from harness.sandbox.launch import SandboxUnavailable, bubblewrap_missing

    visibility = visibility_rules(grade_options.pop("visibility", ()))
    if only and not resume:
        _fail("--only regrades candidates of an earlier run: add --resume")

    missing = bubblewrap_missing()
    if missing and not allow_basic_isolation and scheduler is None:
        _fail(f"batch grading runs each submission in the bubblewrap sandbox, and {missing}; "
              "pass --allow-basic-isolation to grade without it")
    options = _options(grade_options, "auto" if allow_basic_isolation else "sandbox")
    pool = None
    try:
        try:
            pool = _pool(options, jobs, scheduler, allow_basic_isolation)  # the sandbox starts importing torch
            _check_settings(options)
            if check_outdir(outdir, resume):
                load_decisions(outdir)  # a decisions file that cannot be trusted is refused before any grading
            # A zip is unpacked beside the results: their snippets import the submission from there.
            submissions = collect(path, entry, outdir / "sources", exclude=outdir)
            settings = settings_record(options, entry)
            pool.ready()
        except HarnessError as exc:
            _fail(str(exc))
        except SandboxUnavailable as exc:
            _fail(f"{exc}; pass --allow-basic-isolation to grade without the sandbox")
        from harness.batch.progress import Progress
        from harness.cli.group import settle_after_imports

        settle_after_imports()
        progress = Progress(len(submissions))
        outputs = Outputs(gradescope=gradescope, junit=junit, similarity_threshold=similarity_threshold,
                          visibility=visibility)
        run, failure = None, ""
        try:
            run = run_batch(submissions, pool, outdir, settings, resume=resume, outputs=outputs, only=only,
                            on_result=progress.finished, on_reused=progress.reused)
        except BatchInterrupted as stop:
            run = stop.run
        except HarnessError as exc:
            failure = str(exc)
        except OSError as exc:
            failure = f"{exc.filename or outdir}: cannot write: {exc.strerror or exc}"
        progress.close()  # before anything else is printed: the progress line may be unfinished
        if failure:
            _fail(failure)
        for note in run.notes:
            click.echo(f"note: {note}", err=True)
        if run.interrupted:
            click.echo(f"interrupted: {len(run.reports)} of {len(submissions)} graded, results kept in {outdir}; "
                       "run again with --resume to finish", err=True)
            sys.exit(130)
        counts = run.summary["counts"]
        reused = f" ({len(run.reused)} from an earlier run)" if run.reused else ""
        click.echo(f"graded {counts['total']} submissions{reused}: {counts['interview_passed']} passed the interview "
                   f"bar, {counts['needs_review']} need review, {counts['integrity_violation']} integrity violations, "
                   f"{counts['error'] + counts['timeout']} could not be graded, "
                   f"{len(run.summary['similarity'])} similar pairs")
        click.echo(f"report: {outdir / 'report.html'}")
    finally:
        if pool is not None:
            pool.close()


def _options(values: dict, isolation: str):
    from harness.grade import GradeOptions

    from harness.cli.group import specs_replaced

    specs, only = tuple(values["specs"]), tuple(values["only_specs"])
    return GradeOptions(level=values["level"], seed=values["seed"], class_name=values["class_name"],
                        specs=specs + only, replace_specs=specs_replaced(specs, only), rubric=values["rubric"],
                        max_examples=values["max_examples"],
                        time_limit=values["time_limit"], memory_mb=values["memory_mb"], isolation=isolation,
                        follow_links=False, agreements=values["agree"], variant=values["variant"])


def _check_settings(options) -> None:
    """A bad rubric or spec folder is the batch's usage error, found once before any grading."""
    from harness.plan import plan
    from harness.report.rubric import load_rubric

    load_rubric(options.rubric)
    plan(options)


def _pool(options, jobs: int, scheduler: str | None, allow_basic: bool):
    if scheduler is not None:
        from harness.batch.remote import DaskPool

        return DaskPool(scheduler, options, allow_basic_isolation=allow_basic)
    from harness.batch.pools import LocalPool

    return LocalPool(options, jobs)


def _fail(message: str) -> None:
    from harness import terminal

    click.echo(terminal.for_stream(f"error: {message}", sys.stderr), err=True)
    sys.exit(2)


batch.params.extend(p for p in grade_file.params if p.name in SHARED_OPTIONS)
