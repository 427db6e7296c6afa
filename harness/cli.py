"""The ``grade`` command line: parses options, calls the grader, renders, sets the exit code."""

from __future__ import annotations

import click

from harness import __version__


@click.group(invoke_without_command=True)
@click.version_option(__version__, prog_name="grade")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Grade a hand-written autograd engine against PyTorch's autograd."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
