"""The ``--watch`` screen at a terminal: each redraw fits it and keeps Fix first in view, what changed is told
against the last graded save, and Ctrl-C ends everything (a plain grade too) with the shell's 130."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from harness.cli.watching import Screen
from harness.report.model import CheckResult, Report, RootCause

ROOT = Path(__file__).resolve().parent.parent
BUGS = ROOT / "tests" / "corpus" / "bugs"


def _report(status: str = "graded", score: float = 10.0, outcome: str = "failed") -> Report:
    checks = () if status == "error" else (CheckResult("core.accumulation", "core", "accumulation", "t", outcome),)
    return Report(file="s.py", status=status, score=score if checks else 0.0, max_score=60.0,
                  levels={"core": {"score": score if checks else 0.0, "max_score": 60.0}}, checks=checks,
                  message="SyntaxError at line 3" if status == "error" else "",
                  root_causes=(RootCause("overwrite", "gradient overwritten instead of accumulated",
                                         checks=("core.accumulation",)),) if outcome == "failed" else ())


def test_what_changed_is_told_against_the_last_graded_save(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("LINES", "24")
    screen = Screen(tmp_path / "s.py", "text", False, False)
    screen.show(_report(score=10.0), final=True)
    screen.show(_report("error"), final=True)
    error = capsys.readouterr().out
    assert "this save could not be graded; the last graded save scored 10.0/60.0" in error
    screen.show(_report(score=35.6, outcome="passed"), final=True)
    shown = capsys.readouterr().out
    # Not "score 0.0 -> 35.6": the save that could not be graded is never the one compared with.
    assert "1 check now passes: core.accumulation" in shown and "score 10.0 -> 35.6 (+25.6)" in shown


def test_watch_waits_for_the_file_to_change(tmp_path):
    path = tmp_path / "s.py"
    path.write_text("a = 1\n")

    def save_later():
        time.sleep(0.5)
        path.write_text("a = 22\n")

    saver = threading.Thread(target=save_later)
    started = time.monotonic()
    saver.start()
    Screen(path, "text", False, False).wait_for_change()
    saver.join()
    assert time.monotonic() - started >= 0.4


# ---- in a terminal of 80 x 24 -----------------------------------------------------------------------


class Emulated:
    """What a terminal of ``columns`` x ``rows`` shows of an output: clear-screen, carriage returns, lines that
    wrap at the edge (deferred, as xterm wraps), and the screen scrolling once the lines outgrow it."""

    def __init__(self, columns: int = 80, rows: int = 24) -> None:
        self.columns, self.rows = columns, rows
        self.lines: list[str] = [""]
        self.column = 0

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            escape = re.match(r"\x1b\[([0-9;?]*)([A-Za-z])", text[i:])
            if escape:
                if escape.group(2) == "J" and escape.group(1) == "2":
                    self.lines, self.column = [""], 0
                i += escape.end()
                continue
            char = text[i]
            i += 1
            if char == "\n":
                self.lines.append("")
                self.column = 0
            elif char == "\r":
                self.column = 0
            elif char.isprintable():
                if self.column >= self.columns:  # the character after a full line starts the next one
                    self.lines.append("")
                    self.column = 0
                line = self.lines[-1]
                self.lines[-1] = line[:self.column] + char + line[self.column + 1:]
                self.column += 1

    def screen(self) -> list[str]:
        return self.lines[-self.rows:]


class Pty:
    """A command in a pseudo-terminal of 80 x 24: its output through ``Emulated``, waiting for a pattern."""

    def __init__(self, argv: list[str], columns: int = 80, rows: int = 24) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        # A session of its own whose controlling terminal is this one: Ctrl-C reaches it as from a shell.
        self.process = subprocess.Popen(argv, cwd=ROOT, stdin=slave, stdout=slave, stderr=slave,
                                        start_new_session=True, env={**env, "NO_COLOR": "1"},
                                        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.terminal = Emulated(columns, rows)
        self.seen = ""

    def read(self, seconds: float) -> None:
        ready, _, _ = select.select([self.master], [], [], seconds)
        if ready:
            try:
                data = os.read(self.master, 65536).decode(errors="replace")
            except OSError:
                return
            self.seen += data
            self.terminal.feed(data)

    def expect(self, pattern: str, timeout: float = 120.0) -> None:
        """Wait for ``pattern`` in the output since the last match."""
        deadline = time.monotonic() + timeout
        while not (found := re.search(pattern, self.seen)):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise AssertionError(f"{pattern!r} not seen within {timeout:g} s; got:\n{self.seen[-3000:]}")
            self.read(0.2)
        self.seen = self.seen[found.end():]

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        os.close(self.master)


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (the grader's sandboxes and workers)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _fix_first_on_screen(terminal: Emulated) -> None:
    screen = terminal.screen()
    # The stub first (what to write), then the first bug, both on screen.
    assert any(line.startswith("  1. implement `relu`") for line in screen), "\n".join(screen)
    assert any(re.match(r"  2\. (likely: )?gradient overwritten instead of accumulated", line) for line in screen), \
        "\n".join(screen)
    assert "Fix first" in screen, "\n".join(screen)


def _two_bugs_and_a_stub() -> str:
    source = (BUGS / "overwrite_closures.py").read_text()
    flipped = source.replace("lambda g: (g @ b.T, a.T @ g)", "lambda g: (g @ b, a.T @ g)")
    stub = flipped.replace("        return self._make(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))",
                           "        raise NotImplementedError")
    assert source != flipped != stub
    return stub


@pytest.mark.slow
def test_every_redraw_keeps_fix_first_on_an_80_by_24_screen_and_ctrl_c_ends_it_all(tmp_path):
    path = tmp_path / "solution.py"
    source = _two_bugs_and_a_stub()
    path.write_text(source)
    t = Pty([sys.executable, "-m", "harness.cli", str(path), "--watch", "--max-examples", "10"])
    try:
        t.expect(r"watching \S+\s+for\s+changes")
        _fix_first_on_screen(t.terminal)
        for edit in (source + "\n# the same bugs\n",
                     source.replace("lambda g: (g @ b, a.T @ g)", "lambda g: (g @ b.T, a.T @ g)")):
            time.sleep(0.05)
            path.write_text(edit)
            t.expect(r"grading the follow-ups and extensions")  # the core level's screen
            _fix_first_on_screen(t.terminal)
            t.expect(r"watching \S+\s+for\s+changes")  # every level's
            _fix_first_on_screen(t.terminal)
        assert "since the last graded save:" in "\n".join(t.terminal.screen())
        below = _descendants(t.process.pid)
        assert below, "the sandbox runs below the grader"
        os.write(t.master, b"\x03")  # Ctrl-C, as the terminal sends it
        assert t.process.wait(10) == 130
        t.read(0.5)
        assert "Aborted!" not in t.seen
        time.sleep(1.0)
        assert not _alive(below), "processes of the grade outlived it"
    finally:
        t.close()


@pytest.mark.slow
def test_ctrl_c_ends_a_practice_session_with_130(tmp_path):
    path = tmp_path / "solution.py"
    path.write_text((ROOT / "tests" / "solutions" / "overwrite_grad.py").read_text())
    t = Pty([sys.executable, "-m", "harness.cli", str(path), "--practice", "--level", "core", "--max-examples", "10"])
    try:
        t.expect(r"press h and Enter")
        t.expect(r"watching \S+\s+for\s+changes")
        below = _descendants(t.process.pid)
        os.write(t.master, b"\x03")
        assert t.process.wait(10) == 130
        t.read(0.5)
        assert "Aborted!" not in t.seen
        time.sleep(1.0)
        assert not _alive(below)
    finally:
        t.close()


@pytest.mark.slow
def test_ctrl_c_ends_a_plain_grade_with_130_even_when_the_submission_ignores_it(tmp_path):
    path = tmp_path / "solution.py"
    path.write_text((ROOT / "tests" / "solutions" / "hostile_infinite_loop.py").read_text())  # backward never returns
    process = subprocess.Popen([sys.executable, "-m", "harness.cli", str(path), "--max-examples", "10"], cwd=ROOT,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _descendants(process.pid):  # the sandbox is up: the grade is under way
            assert time.monotonic() < deadline and process.poll() is None, "no sandbox started"
            time.sleep(0.05)
        time.sleep(1.0)
        below = _descendants(process.pid)
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: the whole foreground group
        _, stderr = process.communicate(timeout=10)
        assert process.returncode == 130, stderr[-2000:]
        assert "Aborted!" not in stderr and "Traceback" not in stderr
        time.sleep(1.0)
        assert not _alive(below), "processes of the grade outlived it"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
