"""The ``grade`` command line: parses options, calls the grader, renders, sets the exit code.

``grade FILE`` grades a submission; ``grade init`` and ``grade spec ...`` are
subcommands. Heavy imports (torch, the grader) happen inside the commands, after
the sandbox has started importing torch in its own process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from harness import __version__, terminal
from harness.errors import HarnessError, MissingSubmission
from harness.report.formats import ALIASES, FORMATS

LEVEL_CHOICES = ("core", "followups", "extensions", "all")


class _GradeGroup(click.Group):
    """A group whose first argument may be a file: ``grade FILE`` means ``grade file FILE``."""

    LAZY = {"spec": ("harness.cli.spec", "spec"), "batch": ("harness.cli.batch", "batch")}
    """Subcommands imported only when used: they import much of the grader, which must not delay the sandbox."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.list_commands(ctx) and not args[0].startswith("-"):
            args = ["file", *args]
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.LAZY})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.LAZY:
            import importlib

            module, attr = self.LAZY[name]
            return getattr(importlib.import_module(module), attr)
        return super().get_command(ctx, name)


@click.group(cls=_GradeGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="grade")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Grade a hand-written autograd engine against PyTorch's autograd.

    \b
      grade solution.py               grade a submission (text report)
      grade solution.py -h            every option of a grade
      grade solution.py --format json the JSON report, for other tools
      grade init [PATH]               write the candidate template
      grade explain [CONCEPT]         the interview concept behind a check
      grade spec check [PATH...]      validate YAML graph cases
      grade batch FOLDER -o OUT       grade a folder of submissions for interviewers
    """
    _isolate_imports()
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _isolate_imports() -> None:
    """Never import from the working folder: a submissions folder may hold a ``torch.py``."""
    here = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if p and os.path.realpath(p) != here]


class _AgreeParam(click.ParamType):
    name = "terms"

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        from harness.agreements import Agreements, parse_agreements

        if isinstance(value, Agreements):
            return value
        try:
            return parse_agreements(str(value))
        except HarnessError as exc:
            self.fail(str(exc).removeprefix("--agree: "), param, ctx)


class _FileContext(click.Context):
    @property
    def command_path(self) -> str:
        """``grade FILE``: what the user typed, never the hidden command's name (errors end "Try 'grade FILE -h'")."""
        parent = self.parent.command_path if self.parent is not None else "grade"
        return f"{parent} FILE"


class _FileCommand(click.Command):
    """``grade FILE [OPTIONS]``: the command that ``grade FILE`` runs, named in its usage as the user types it."""

    context_class = _FileContext

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return ["[OPTIONS]"]


@main.command("file", hidden=True, cls=_FileCommand)
@click.argument("path", metavar="FILE", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice((*FORMATS, *ALIASES)), default="text", show_default=True,
              help="Report format (md: markdown).")
@click.option("--level", type=click.Choice(LEVEL_CHOICES), default="all", show_default=True,
              help="Grade only this level.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random graphs.")
@click.option("--specs", "specs", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Spec folder or file to grade with, besides the shipped library (repeatable).")
@click.option("--only-specs", "only_specs", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Spec folder or file to grade with instead of the shipped library (repeatable).")
@click.option("--rubric", type=click.Path(dir_okay=False, path_type=Path), help="Rubric YAML replacing the default.")
@click.option("--class-name", default="Tensor", show_default=True,
              help="The submission's tensor class. Without it, a file with no Tensor but one class that looks like "
                   "an engine has that class graded.")
@click.option("--max-examples", type=click.IntRange(1, 100_000), default=200, show_default=True,
              help="Random graphs tried by the core property check.")
@click.option("--time-limit", type=click.FloatRange(1), default=600.0, show_default=True,
              help="Seconds for the whole submission.")
@click.option("--memory-mb", type=click.IntRange(64), default=2048, show_default=True,
              help="Memory limit of the submission's process.")
@click.option("--agree", type=_AgreeParam(), default="", metavar="TERMS",
              help="What the interview agreed, e.g. broadcasting=no,upstream=no,second_backward=overwrite: "
                   "checks of what was agreed away are not required.")
@click.option("--variant", type=click.Choice(("tensor", "function")), default="tensor", show_default=True,
              help="function: each op is a torch.autograd.Function run by torch's engine (its formulas are graded).")
@click.option("--watch", is_flag=True,
              help="Grade again on every save: the core level first, each screen fitted to the terminal (f and Enter: "
                   "the full report; Ctrl-C: stop, exit code 130).")
@click.option("--practice", is_flag=True,
              help="With --watch (implied): a timed practice session, help one step at a time, then follow-ups.")
@click.option("--practice-minutes", type=click.FloatRange(1), default=45.0, show_default=True,
              help="The practice session's timer.")
@click.option("--require-sandbox", is_flag=True,
              help="Refuse to grade without the bubblewrap sandbox (for untrusted submissions).")
@click.option("-v", "--verbose", is_flag=True, help="List every check in the text report, passes included.")
@click.option("-o", "--output", "output_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Also write the report as JSON, Markdown and text into this folder.")
@click.option("--visibility", "visibility", multiple=True, metavar="PATTERN=VISIBILITY",
              help="Gradescope visibility of the tests whose id, level or concept matches PATTERN (visible, hidden, "
                   "after_due_date, after_published; repeatable, the last match wins).")
def grade_file(path: Path, fmt: str, level: str, seed: int, specs: tuple[Path, ...], only_specs: tuple[Path, ...],
               rubric: Path | None,
               class_name: str, max_examples: int, time_limit: float, memory_mb: int, agree: Any, variant: str,
               watch: bool, practice: bool, practice_minutes: float, require_sandbox: bool, verbose: bool,
               output_dir: Path | None, visibility: tuple[str, ...]) -> None:
    """Grade the submission FILE (a .py file or a notebook) against PyTorch's autograd.

    The text report fits the terminal: "Fix first" (what to fix, with a snippet that
    shows it), one line per level, the score; -v lists every check. Exit code: 0 every
    attempted check passed, 1 some check failed, 2 bad usage or input, 3 not gradable
    (import error, crash, timeout), 4 integrity violation.
    """
    # Everything up to the first grade is torch-free: a file that cannot be graded is
    # reported from its source alone, in milliseconds.
    from harness.grade import GradeOptions, preflight
    from harness.report.model import Report, exit_code
    from harness.report.formats import render

    fmt = ALIASES.get(fmt, fmt)
    rules = visibility_rules(visibility)
    if watch and not FORMATS[fmt].watched:
        raise click.BadParameter("--watch shows the text, JSON or Markdown report", param_hint="--format")
    if fmt == "gradescope":  # Gradescope shows the student a results.json, whatever goes wrong
        click.get_current_context().meta["harness.gradescope"] = True
    isolation = "sandbox" if require_sandbox else "auto"
    options = GradeOptions(level=level, seed=seed, class_name=class_name, specs=specs + only_specs,
                           replace_specs=specs_replaced(specs, only_specs), rubric=rubric, max_examples=max_examples,
                           time_limit=time_limit, memory_mb=memory_mb, isolation=isolation, agreements=agree,
                           variant=variant, pick_class=_defaulted("class_name"))
    colour = fmt == "text" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    if watch or practice:
        from harness.cli.watching import watch_file

        session = None
        if practice:
            from harness.practice import Practice

            session = Practice(minutes=practice_minutes)
        watch_file(path, options, fmt, colour, verbose, output_dir, session)
    try:
        early = preflight(path, options)  # no torch yet: the sandbox's import starts first
    except MissingSubmission as exc:
        _fail(str(exc), GRADESCOPE_NAMING if fmt == "gradescope" else "")
    except HarnessError as exc:
        _fail(str(exc))
    if isinstance(early, Report):
        report = early
    else:
        launcher = None
        try:
            launcher = _launcher(isolation)  # a Ctrl-C while the sandbox starts is an interrupt too
            report = _grade(early, options, launcher)
        except KeyboardInterrupt:
            interrupted()  # the sandbox closes on the way out
        finally:
            if launcher is not None:
                launcher.close()
    click.echo(render(report, fmt, colour=colour, verbose=verbose, visibility=rules, width=terminal.width(sys.stdout),
                      height=max(terminal.SCREEN_LINES, terminal.height(sys.stdout) or 0)))
    if output_dir is not None:
        _write_formats(report, output_dir, path.stem)
    sys.exit(exit_code(report))


def _defaulted(parameter: str) -> bool:
    """Whether ``parameter`` has its default value because the user gave none."""
    from click.core import ParameterSource

    return click.get_current_context().get_parameter_source(parameter) is ParameterSource.DEFAULT


def visibility_rules(rules: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    from harness.report.tables import parse_visibility

    try:
        return parse_visibility(rules)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--visibility") from None


GRADESCOPE_NAMING = ("Name your engine solution.py, or submit exactly one .py or .ipynb file: either is what "
                     "the autograder grades.")
"""What a student whose submission the Gradescope recipe could not pick a file from is told (README's recipe)."""


def _gradescope_fail(message: str, advice: str = "") -> None:
    """A file that cannot be graded at all, as Gradescope results: score 0 and the reason (exit code 2)."""
    import json

    output = f"could not be graded: {message}" + (f"\n\n{advice}" if advice else "")
    click.echo(json.dumps({"score": 0.0, "output": output, "output_format": "text",
                           "visibility": "visible", "stdout_visibility": "hidden", "tests": []}, indent=2))
    click.echo(terminal.for_stream(f"error: {message}", sys.stderr), err=True)
    sys.exit(2)


def specs_replaced(specs: tuple[Path, ...], only_specs: tuple[Path, ...]) -> bool:
    """Whether the spec folders replace the shipped library; --specs and --only-specs do not mix."""
    if specs and only_specs:
        _fail("--specs adds to the shipped library and --only-specs replaces it: use one of them")
    return bool(only_specs)


def _launcher(isolation: str) -> Any:
    from harness.sandbox.launch import Launcher, SandboxUnavailable

    try:
        return Launcher(isolation)  # imports torch in the sandbox while the grader does here
    except SandboxUnavailable as exc:
        _fail(f"{exc}; --require-sandbox refuses to grade without it")


def _grade(submission: Any, options: Any, launcher: Any) -> Any:
    from harness.grade import grade_submission

    settle_after_imports()
    try:
        return grade_submission(submission, options, launcher)
    except HarnessError as exc:
        _fail(str(exc))


def interrupted() -> None:
    """Ctrl-C: the shell's exit status for it (130), without click's 'Aborted!'; the sandbox is already closed."""
    click.echo("", err=True)
    sys.exit(130)


def _write_formats(report, folder: Path, stem: str) -> None:
    from harness.report.files import write_formats

    try:
        write_formats(report, folder, stem)
    except OSError as exc:
        _fail(f"{folder}: cannot write the reports: {exc.strerror}")


def settle_after_imports() -> None:
    """Tune the grader's own process once torch is imported.

    Its tensors are tiny, so torch's thread pool only competes with the worker for the
    cores; and freezing the objects of the imports keeps every later garbage
    collection from scanning them again. Torch's import makes hundreds of thousands of
    objects that are never garbage: collecting while it runs (two full collections)
    costs a tenth of a second for nothing, so the collector waits until it is done.
    """
    from harness.collector import collector_paused

    with collector_paused(freeze=True):
        import torch

        torch.set_num_threads(1)


@main.command("explain")
@click.argument("name", required=False)
@click.option("--depth", type=click.Choice(("junior", "middle", "senior", "principal")),
              help="Only this depth (default: all four).")
def explain(name: str | None, depth: str | None) -> None:
    """Explain the interview concept NAME behind a check (without NAME: list them)."""
    from harness.concepts import render_concept, render_list

    width = terminal.width(sys.stdout)
    if name is None:
        click.echo(render_list(width))
        return
    try:
        click.echo(render_concept(name, depth, width))
    except HarnessError as exc:
        _fail(str(exc))


@main.command("init")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path), default="solution.py")
@click.option("--minimal", is_flag=True,
              help="Only the interface as the interview states it: no docstrings that hint at the answers.")
def init(path: Path, minimal: bool) -> None:
    """Write the candidate template to PATH (default solution.py)."""
    from importlib import resources

    if path.is_symlink():
        _fail(f"{path}: is a symbolic link; not writing through it")
    if path.exists():
        _fail(f"{path}: already exists; not overwriting it")
    template = resources.files("candidate_template").joinpath("minimal.py" if minimal else "solution.py").read_text()
    try:
        # O_EXCL: never through a link or over a file that appeared since the check above.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(template)
    except FileExistsError:
        _fail(f"{path}: already exists; not overwriting it")
    except OSError as exc:
        _fail(f"{path}: cannot write: {exc.strerror}")
    click.echo(f"wrote {path}: implement the Tensor class, then run `grade {path}`")


def _fail(message: str, gradescope_advice: str = "") -> None:
    context = click.get_current_context(silent=True)
    if context is not None and context.meta.get("harness.gradescope"):
        _gradescope_fail(message, gradescope_advice)
    click.echo(terminal.for_stream(f"error: {message}", sys.stderr), err=True)
    sys.exit(2)

