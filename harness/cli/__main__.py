"""``python -m harness.cli``: the ``grade`` command."""

from harness.cli.entry import run

run()
