"""The ``grade`` process's end: the exit status, output and clean-up Python's own exit would give, sooner.

Each case runs a stand-in for the command line in a real process and compares what the
process leaves (status, stdout, stderr, files) with what plain Python leaves for the same code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def _process(body: str, *, through_run: bool) -> subprocess.CompletedProcess:
    """``body`` as the command line's main: run by ``harness.cli.entry.run``, or by plain Python."""
    code = "import atexit, os, sys, threading, time\ndef main():\n" + textwrap.indent(textwrap.dedent(body), "    ")
    code += "\nimport harness.cli.entry as entry\nentry.main = main\nentry.run()\n" if through_run else "\nmain()\n"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as on most machines
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("code", ["None", "0", "1", "3", "256", "-1", "True", "2**40 + 3", "'a message'", "['a', 'list']"])
def test_every_exit_code_ends_the_process_as_pythons_own_exit_would(code):
    body = f"sys.exit({code})"
    ours, python = _process(body, through_run=True), _process(body, through_run=False)
    assert (ours.returncode, ours.stdout, ours.stderr) == (python.returncode, python.stdout, python.stderr)


def test_a_main_that_returns_ends_with_status_zero():
    assert _process("print('done')", through_run=True).returncode == 0


def test_buffered_output_and_exit_handlers_are_not_lost(tmp_path):
    # Output to a pipe is block-buffered: only a flush puts it there. The handler stands for
    # the temporary folders and hypothesis's home, which remove themselves at exit.
    marker = tmp_path / "handler-ran"
    body = f"""
    sys.stdout.write('the report')
    sys.stderr.write('a warning')
    atexit.register(lambda: open({str(marker)!r}, 'w').close())
    sys.exit(1)
    """
    done = _process(body, through_run=True)
    assert done.returncode == 1
    assert done.stdout == "the report" and done.stderr == "a warning"
    assert marker.exists()


def test_a_thread_still_working_is_waited_for(tmp_path):
    finished = tmp_path / "thread-finished"
    body = f"""
    def work():
        time.sleep(0.5)
        open({str(finished)!r}, 'w').close()
    threading.Thread(target=work).start()
    sys.exit(2)
    """
    done = _process(body, through_run=True)
    assert done.returncode == 2 and finished.exists()


def test_an_exception_is_reported_as_python_reports_it():
    body = "raise RuntimeError('a fault of the grader')"
    ours, python = _process(body, through_run=True), _process(body, through_run=False)
    assert ours.returncode == python.returncode == 1
    assert ours.stderr.splitlines()[-1] == python.stderr.splitlines()[-1] == "RuntimeError: a fault of the grader"
