"""``grade spec ...``: commands for spec authors (check, new, fill)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Sequence

import click
import yaml

from harness import specs, terminal
from harness.specs.text import expect_lines, fill, quote, states_everything
from harness.ops import LEVELS, OPS
from harness.specs import CONCEPTS, DEFAULT_SPECS_DIR
from harness.terminal import wrap

__all__ = ["spec"]


@click.group()
def spec() -> None:
    """Write and check YAML graph cases: the spec library's cases and your own.

    \b
      grade spec new ID --expr "(x @ W).sum()" --input x=2x3 --input W=3x4
                              draft a case; torch computes its expectations
      grade spec fill FILE    write torch's expectations into the cases of FILE
      grade spec check [PATH] validate cases as grading reads them
      grade spec audit        which checks catch each catalogued bug
      grade FILE --specs DIR  grade with your cases besides the shipped library
    """


def _shown(path: Path) -> Path:
    """``path`` relative to the working directory when it lies below it, for shorter messages."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _say(message: str) -> None:
    """A message for a person at a terminal, wrapped to it (its first line starts with FILE:LINE:COLUMN); piped,
    one line each, as tools and editors read ``file:line:column: message``."""
    if _at_terminal():
        click.echo("\n".join(wrap(message, terminal.width(sys.stdout), "", "    ")))
    else:
        click.echo(message)


def _at_terminal() -> bool:
    return sys.stdout.isatty()


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


# ---- check ---------------------------------------------------------------------------


@spec.command("check", short_help="Validate cases as grading reads them (their numbers, their ids).")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--only-specs", "alone", is_flag=True,
              help="Check PATHS as `grade FILE --only-specs` reads them: alone, so an id the shipped library also "
                   "has is no clash.")
def check_command(paths: tuple[Path, ...], alone: bool) -> None:
    """Validate spec files or folders (default: the shipped library) as grading reads them.

    Every case is read and its stated numbers are checked against torch's autograd; ids must be
    unique, also against the shipped library, which `grade FILE --specs PATH` grades them with.
    Prints one line per error as FILE:LINE:COLUMN: MESSAGE and a count line last. Exits 1 if
    any case is invalid.
    """
    if not paths:
        if not DEFAULT_SPECS_DIR.is_dir():
            raise click.UsageError(f"no PATH given and the default spec folder {DEFAULT_SPECS_DIR} does not exist")
        paths = (_shown(DEFAULT_SPECS_DIR),)
    library = () if alone or not DEFAULT_SPECS_DIR.is_dir() else (_shown(DEFAULT_SPECS_DIR),)
    result = specs.check_specs(paths, beside=library)
    if not result.files:
        _say(f"no spec files (*.yaml) in {', '.join(map(str, paths))}")
        raise click.exceptions.Exit(1)
    for error in result.errors:
        _say(str(error))
    cases, files = _plural(result.case_count, "case"), _plural(len(result.files), "file")
    if result.errors:
        _say(f"{_plural(len(result.errors), 'error')} in {cases} in {files}")
        raise click.exceptions.Exit(1)
    click.echo(f"{cases} in {files}: all valid")


# ---- new -----------------------------------------------------------------------------

_SHAPE = re.compile(r"\d+(?:x\d+)*")


def _parse_shape(text: str, option: str) -> list[int]:
    if text in ("", "scalar", "()"):
        return []
    if not _SHAPE.fullmatch(text) or any(int(s) < 1 for s in text.split("x")):
        raise click.BadParameter(f"shape {text!r} must look like 2x3 (positive sizes), or 'scalar'", param_hint=option)
    return [int(s) for s in text.split("x")]


def _parse_assignment(text: str, option: str) -> tuple[str, str]:
    name, sep, rest = text.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name.strip()):
        raise click.BadParameter(f"{text!r} must look like NAME=VALUE with NAME an identifier", param_hint=option)
    return name.strip(), rest.strip()


def _flow_list(items: Sequence[object]) -> str:
    return "[" + ", ".join(str(i) for i in items) + "]"


def _case_text(
    case_id: str,
    *,
    title: str,
    level: str,
    concepts: Sequence[str],
    hint: str | None,
    inputs: Sequence[str],
    steps: Sequence[tuple[str, str]],
    output: str,
    upstream: str | None,
    passes: int,
) -> list[str]:
    lines = [f"- id: {case_id}", f"  title: {quote(title)}", f"  level: {level}", f"  concepts: {_flow_list(concepts)}"]
    if hint:
        lines.append(f"  hint: {quote(hint)}")
    lines.append("  inputs:")
    lines += [f"    {line}" for line in inputs]
    if steps:
        lines.append("  steps:")
        lines += [f"    {name}: {quote(expr)}" for name, expr in steps]
    lines.append(f"  output: {quote(output)}")
    if upstream is not None:
        lines.append(f"  upstream: {upstream}")
    if passes != 1:
        lines.append(f"  passes: {passes}")
    return lines


def _compile_draft(lines: list[str], label: str, *, check: bool = False) -> specs.SpecCase:
    parsed = specs.parse_file(label, "\n".join(lines) + "\n", check_expectations=check)
    errors = parsed.all_errors()
    if errors:
        message = errors[0].message
        if "non-scalar output needs `upstream`" in message:
            message += "; pass --upstream to add a random one"
        raise click.UsageError(f"the new case is invalid: {message}")
    case = parsed.cases[0].case
    assert case is not None
    return case


def _default_concepts(case: specs.SpecCase) -> list[str]:
    """The concepts of every op of the case (an op's own and the ones it teaches), then of its features."""
    concepts = [c for s in case.program.steps for c in (OPS[s.op].concept, *OPS[s.op].teaches)]
    if "feature:broadcasting" in case.requirements:
        concepts.append("broadcasting")
    if "feature:upstream" in case.requirements:
        concepts.append("upstream")
    if "feature:passes" in case.requirements:
        concepts.append("accumulation")
    return list(dict.fromkeys(c for c in concepts if c in CONCEPTS)) or ["ops"]


@spec.command("new", short_help="Draft a case from an expression; torch computes its expectations.")
@click.argument("case_id", metavar="ID")
@click.option("--expr", required=True, help='The output expression, written like candidate code: "(x @ W).relu().sum()".')
@click.option("--input", "inputs", multiple=True, metavar="NAME=SHAPE", help="A float64 input, e.g. x=2x3 (or x=scalar).")
@click.option("--int", "int_inputs", multiple=True, metavar="NAME=SHAPE:HIGH",
              help="An int64 input with values in [0, HIGH), e.g. t=3:5 (targets, embedding ids).")
@click.option("--step", "steps", multiple=True, metavar="NAME=EXPR", help="A named intermediate result, in order.")
@click.option("--init", type=click.Choice(["randn", "uniform", "ints"]), default="randn", show_default=True,
              help="How float inputs are generated (uniform: in [0, 1), positive for log).")
@click.option("--level", type=click.Choice(LEVELS), help="Default: the lowest level the case needs.")
@click.option("--concept", "concepts", multiple=True, type=click.Choice(CONCEPTS), metavar="CONCEPT",
              help="A concept the case teaches (`grade explain` lists them; repeatable). Default: the concepts of "
                   "every op of the expression.")
@click.option("--title", help="One line. Default: the expression.")
@click.option("--hint", help="Shown to a candidate who fails the case.")
@click.option("--upstream", is_flag=True, help="Pass a random gradient of the output's shape to backward().")
@click.option("--passes", type=click.IntRange(1, 2), default=1, show_default=True,
              help="2: two forward and backward passes, whose gradients the leaves add up.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the first input; the next get seed+1, ...")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Append the case to this file (created if missing). Default: print it.")
def new_command(
    case_id: str,
    expr: str,
    inputs: tuple[str, ...],
    int_inputs: tuple[str, ...],
    steps: tuple[str, ...],
    init: str,
    level: str | None,
    concepts: tuple[str, ...],
    title: str | None,
    hint: str | None,
    upstream: bool,
    passes: int,
    seed: int,
    out: Path | None,
) -> None:
    """Write a new case ID for the expression --expr: its inputs drawn from a seed, its level and concepts
    worked out from the ops it uses, its expectations computed by torch's autograd (float64).

    The case is printed, or appended to --out; it passes `grade spec check` as written.
    """
    if not re.fullmatch(r"[a-z0-9_.-]+", case_id):
        raise click.BadParameter("an id may only use lowercase letters, digits, '_', '.' and '-'", param_hint="ID")
    if not inputs and not int_inputs:
        raise click.UsageError("give at least one --input NAME=SHAPE")
    _refuse_duplicate(case_id, out)

    input_lines, next_seed = [], seed
    for text in inputs:
        name, shape = _parse_assignment(text, "--input")
        input_lines.append(f"{name}: {{shape: {_flow_list(_parse_shape(shape, '--input'))}, init: {init}, seed: {next_seed}}}")
        next_seed += 1
    for text in int_inputs:
        name, rest = _parse_assignment(text, "--int")
        shape, sep, high = rest.rpartition(":")
        if not sep or not high.isdigit() or int(high) < 1:
            raise click.BadParameter(f"{text!r} must look like NAME=SHAPE:HIGH, e.g. t=3:5", param_hint="--int")
        input_lines.append(
            f"{name}: {{shape: {_flow_list(_parse_shape(shape, '--int'))}, init: randint, high: {high}, seed: {next_seed}}}"
        )
        next_seed += 1
    named_steps = [_parse_assignment(text, "--step") for text in steps]

    fields = dict(title=title or expr, level=level or LEVELS[-1], concepts=list(concepts) or ["ops"], hint=hint,
                  inputs=input_lines, steps=named_steps, output=expr, upstream=None, passes=passes)
    if upstream:
        # The upstream gradient needs the output's shape: find it from the expression summed to a scalar.
        draft = _compile_draft(_case_text(case_id, **{**fields, "output": f"({expr}).sum()"}), "--expr")
        summed = draft.expected.values.get(str(draft.program.steps[-1].args[0]))
        shape = [] if summed is None else list(summed.shape)  # no op at all: the next compile says so
        fields["upstream"] = f"{{shape: {_flow_list(shape)}, init: randn, seed: {next_seed}}}"
    draft = _compile_draft(_case_text(case_id, **fields), "--expr")
    fields["level"] = level or draft.program.level()
    fields["concepts"] = list(concepts) or _default_concepts(draft)
    lines = _case_text(case_id, **fields)
    case = _compile_draft(lines, "--expr")
    lines += expect_lines(case, 2)
    _compile_draft(lines, "--expr", check=True)  # the written case must pass `grade spec check`
    text = "\n".join(lines) + "\n"
    if out is None:
        click.echo(text, nl=False)
        return
    _append(out, text)
    click.echo(f"added case {case_id} to {out}", err=True)


def _refuse_duplicate(case_id: str, out: Path | None) -> None:
    files = []
    if DEFAULT_SPECS_DIR.is_dir():
        files += specs.spec_files([DEFAULT_SPECS_DIR])
    if out is not None and out.exists():
        files.append(out)
    for path in dict.fromkeys(files):
        for other, where in specs.case_ids(path):
            if other == case_id:
                raise click.ClickException(f"id {case_id!r} already exists at {_shown(Path(where.path))}:{where.line}:{where.column}")


def _append(out: Path, text: str) -> None:
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        return
    existing = out.read_text(encoding="utf-8")
    parsed = specs.parse_file(out, existing, check_expectations=False)
    if parsed.errors and parsed.root is None and existing.strip():
        raise click.ClickException(f"cannot append to {out}: {parsed.errors[0]}")
    if parsed.root is not None and not isinstance(parsed.root, yaml.SequenceNode):
        raise click.ClickException(f"cannot append to {out}: it holds a single case; make it a list (`- id: ...`) first")
    if existing and not existing.endswith("\n"):
        existing += "\n"
    out.write_text(existing + ("\n" if existing.strip() else "") + text, encoding="utf-8")


# ---- fill ----------------------------------------------------------------------------


@spec.command("fill", short_help="Write torch's expectations into the cases of FILES.")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True,
              help="Also replace expect blocks written by hand (wrong, incomplete, or complete and right).")
def fill_command(files: tuple[Path, ...], force: bool) -> None:
    """Add or refresh the torch-computed expect block of every case in FILES.

    A case without an expect block gets one; a block that fill wrote before is
    recomputed. A block written by hand is never replaced silently: when it
    disagrees with torch or leaves out the output or a gradient, fill prints the
    old and the new lines and leaves the file alone (exit 1) unless --force; a
    complete, correct one is kept as written unless --force. Nothing else in the
    file changes: comments, quoting and key order are kept. Cases that are
    invalid for other reasons are reported and left alone (exit 1).
    """
    failed = False
    for path in files:
        parsed = specs.parse_file(path, check_expectations=False)
        checked = specs.parse_file(path, parsed.text)
        keep = set() if force else {
            i for i, entry in enumerate(checked.cases) if entry.case is not None and states_everything(entry.case)
        }
        result = fill(parsed, keep)
        for error in result.errors:
            _say(str(error))
        failed |= bool(result.errors)
        if result.by_hand and not force:
            for case_id, old, new in result.by_hand:
                _say(f"{path}: {case_id}: the expect block written by hand is not what torch computes:")
                click.echo("\n".join([*(f"  - {line}" for line in old), *(f"  + {line}" for line in new)]))
            _say(f"{path}: not changed; rerun with --force to replace expectations written by hand")
            failed = True
            continue
        if result.text != parsed.text:
            recheck = specs.parse_file(path, result.text)
            valid_before = sum(c.case is not None for c in parsed.cases)
            if sum(c.case is not None for c in recheck.cases) < valid_before:
                problems = "; ".join(str(e) for e in recheck.all_errors())
                raise click.ClickException(f"{path} was not changed: the filled text would not load ({problems})")
            path.write_text(result.text, encoding="utf-8")
        click.echo(
            f"{path}: {_plural(len(result.added), 'expect block')} added, {len(result.refreshed)} refreshed, "
            f"{len(result.unchanged)} unchanged"
        )
    if failed:
        raise click.exceptions.Exit(1)


# ---- audit ---------------------------------------------------------------------------


@spec.command("audit", short_help="Which checks catch each catalogued bug (and which your cases catch).")
@click.option("--specs", "spec_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="Spec folder or file to grade with besides the shipped library (repeatable): the audit then "
                   "says which bugs your cases catch.")
@click.option("--max-examples", type=click.IntRange(1, 100_000), default=200, show_default=True,
              help="Random graphs tried by the core property check.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random graphs.")
@click.option("--bug", "bug_ids", multiple=True, metavar="ID", help="Audit only this catalogued bug (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: the kill matrix for tools.")
def audit_command(spec_paths: tuple[Path, ...], max_examples: int, seed: int, bug_ids: tuple[str, ...],
                  fmt: str) -> None:
    """Grade every catalogued bug as a submission and show which checks catch it.

    Each bug of the catalogue is the reference engine with that one mistake. With --specs,
    it also says which bugs your own cases catch, and which bugs no case of the shipped
    library catches (where a new case would add most). Exits 1 when a bug fails no check
    or the reference engine fails one.
    """
    import json

    from harness.diagnosis import BUGS
    from harness.cli.audit import render_audit, run_audit
    from harness.errors import HarnessError

    known = [b.id for b in BUGS]
    for bug_id in bug_ids:
        if bug_id not in known:
            raise click.BadParameter(f"no catalogued bug {bug_id!r} (one of: {', '.join(known)})", param_hint="--bug")

    def progress(bug_id: str) -> None:
        if fmt == "text":
            click.echo(f"grading {bug_id} ...", err=True)

    try:
        audit = run_audit(specs=spec_paths, max_examples=max_examples, seed=seed, bugs=bug_ids or None,
                          progress=progress)
    except (HarnessError, specs.SpecError) as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(json.dumps(audit.to_dict(), indent=2) if fmt == "json" else
               render_audit(audit, terminal.width(sys.stdout)))
    if not audit.ok:
        raise click.exceptions.Exit(1)
