"""The ``grade`` command line, on top of every stage: it parses options, calls the grader,
renders, and sets the exit code. Nothing below it imports it.

entry.py  the process: the group, then an exit without the interpreter's teardown
group.py  the ``grade`` group: ``grade FILE`` (and ``--watch``), ``init``, ``explain``
batch.py  ``grade batch``: a folder (or zip) of submissions for interviewers
decide.py ``grade batch decide``: a person's decision about one candidate of a graded batch
spec.py   ``grade spec ...``: check, write and fill YAML graph cases
audit.py  the kill matrix behind ``grade spec audit``

``batch`` and ``spec`` are imported only when used: they import much of the grader, which must
not delay the sandbox. ``grade`` (pyproject's console script) is ``harness.cli:run``, which runs
``main`` (what tests call in-process) and then ends the process.
"""

from harness.cli.entry import run
from harness.cli.group import main

__all__ = ["main", "run"]
