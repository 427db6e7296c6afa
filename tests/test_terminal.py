"""The terminal a text is shown on: COLUMNS wins, then the terminal's own width, 100 when neither is known; text
is wrapped with hanging indents, and an error is wrapped for a person at a terminal and left one line for a tool."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from harness import terminal

ROOT = Path(__file__).resolve().parent.parent


def test_columns_wins_and_a_pipe_gets_100(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal.width(io.StringIO()) == terminal.DEFAULT_WIDTH == 100
    monkeypatch.setenv("COLUMNS", "80")
    assert terminal.width(io.StringIO()) == 80
    monkeypatch.setenv("COLUMNS", "12")  # narrower than a hanging indent leaves room for
    assert terminal.width() == terminal.MIN_WIDTH
    monkeypatch.setenv("COLUMNS", "wide")
    assert terminal.width() == 100


def test_wrap_hangs_its_indent_and_keeps_an_id_whole():
    lines = terminal.wrap("gates failed: core.requires_grad, core.grad_types, core.accumulation", 40, "", "  ")
    assert lines == ["gates failed: core.requires_grad,", "  core.grad_types, core.accumulation"]
    assert terminal.clip("abcdefghij", 8) == "abcde..."


def test_an_error_is_wrapped_at_a_terminal_and_one_line_in_a_pipe(monkeypatch):
    message = "error: unknown concept 'accumulaton' (did you mean accumulation?); " + "a, " * 40
    assert terminal.for_stream(message, io.StringIO()) == message
    master, slave = pty.openpty()
    try:
        monkeypatch.setenv("COLUMNS", "80")
        with os.fdopen(os.dup(slave), "w") as tty:
            lines = terminal.for_stream(message, tty).splitlines()
        assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
        assert " ".join(lines).split() == message.split()
    finally:
        os.close(master)
        os.close(slave)


def test_grade_explain_with_a_typo_fits_80_columns_and_says_did_you_mean():
    master, slave = pty.openpty()
    try:
        env = {**os.environ, "COLUMNS": "80"}
        done = subprocess.run([sys.executable, "-m", "harness.cli", "explain", "accumulaton"], cwd=ROOT,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env, timeout=60)
        os.close(slave)
        slave = -1
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's other end has closed: everything is read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if slave != -1:
            os.close(slave)
        os.close(master)
    assert done.returncode == 2
    lines = seen.decode().replace("\r\n", "\n").strip().splitlines()
    assert lines[0].startswith("error: unknown concept 'accumulaton' (did you mean accumulation?)")
    assert all(len(line) <= 80 for line in lines), lines
