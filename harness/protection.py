"""Hardening the grader's own process before any submission runs, sandbox or not.

Every module a grade will ever import is imported here, first: what a submission
could plant later (where it could write at all) is never loaded.
"""

from __future__ import annotations

import contextlib

from harness.collector import collector_paused
from harness.sandbox import _linux

__all__ = ["protect_grader"]


def protect_grader() -> None:
    """Harden the grader's own process, where no sandbox exists as much as where one does.

    Non-dumpable: a process of the same user cannot ptrace it or open its
    /proc/<pid>/mem. And every module the grader will ever import is imported now,
    before any submission runs, so nothing it loads later could have been planted.
    The renderers are above the grader: whoever renders (the command line, batch's
    grading.py) imports them before its first grade.
    """
    try:
        _linux.prctl(_linux.PR_SET_DUMPABLE, 0)
    except OSError:
        pass
    import importlib

    # The first time, the imports' objects are made with the collector paused and frozen
    # afterwards: they live as long as the process, and no later collection scans them again.
    # (Later, freezing would also keep what a grade left behind from ever being collected.)
    first = not _HYPOTHESIS_HOME  # the first call is the one that gives hypothesis its home
    with collector_paused(freeze=True) if first else contextlib.nullcontext():
        _keep_hypothesis_out_of_the_users_folders()
        for name in _LATE_IMPORTS:
            try:
                importlib.import_module(name)
            except ImportError:
                pass


_HYPOTHESIS_HOME: list[str] = []


def _keep_hypothesis_out_of_the_users_folders() -> None:
    """Hypothesis keeps caches under ``.hypothesis/`` in the working folder: give it a private temporary one."""
    if _HYPOTHESIS_HOME:
        return
    import atexit
    import shutil
    import tempfile

    from hypothesis.configuration import set_hypothesis_home_dir

    home = tempfile.mkdtemp(prefix="grade-hypothesis-")
    set_hypothesis_home_dir(home)
    atexit.register(shutil.rmtree, home, True)
    _HYPOTHESIS_HOME.append(home)


_LATE_IMPORTS = (
    "harness.checks.properties", "harness.checks.strategies", "harness.checks.targeted", "harness.checks.context",
    "harness.checks.saved_tensors", "harness.checks.ties", "harness.specs.as_checks",
    "harness.checks.examples", "harness.specs", "harness.checks.snippets",
    "harness.diagnosis.causes", "harness.diagnosis.matching", "harness.diagnosis.mutants", "reference.engine",
    "harness.checks.probes", "harness.checks.run", "harness.checks.observation", "harness.checks.experiments",
    # What hypothesis and torch would otherwise import on first use, mid-grade:
    "numpy.random", "secrets", "hmac", "torch._subclasses.schema_check_mode",
)
