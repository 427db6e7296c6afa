"""``python -m harness.cli``: the ``grade`` command."""

from harness.cli.group import main

main()
