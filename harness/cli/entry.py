"""The ``grade`` process itself: the command line, then an exit that skips the interpreter's teardown.

Once torch is imported, tearing the interpreter down (every module's objects freed one by
one, torch's libraries unloaded) takes about a third of a second, after the report is
printed and every file is written: a cost the user waits for at the prompt, for nothing
the operating system would not do faster when the process ends.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

from harness.cli.group import main

__all__ = ["run", "exit_status"]


def run() -> NoReturn:
    """Run ``grade`` and end the process with its exit status, without the interpreter's teardown."""
    try:
        main()
    except SystemExit as exc:
        status = exit_status(exc.code)
    else:
        status = 0
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(status)  # a thread still working is waited for, as Python's own exit waits for it
    atexit._run_exitfuncs()  # what registered itself for the end (temporary folders, hypothesis's home) still runs
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            if stream is sys.stdout:
                status = 120  # what Python's own exit gives when the output could not be written
    os._exit(status)


def exit_status(code: object) -> int:
    """The exit status ``SystemExit(code)`` gives a process, as Python's own exit computes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1
