"""The practice session: its logic on made-up reports, and one session driven in a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.concepts import concepts
from harness.practice import FOLLOW_UPS, Practice
from harness.report.model import CheckResult, Report, RootCause

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "tests" / "solutions"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _report(*checks: CheckResult, causes: tuple = ()) -> Report:
    return Report(file="s.py", status="graded", score=0, max_score=1, levels={}, checks=checks, root_causes=causes)


def _check(cid: str, outcome: str, concept: str = "accumulation", level: str = "core", **details) -> CheckResult:
    return CheckResult(cid, level, concept, cid, outcome, details=details)


FAILING = _report(_check("core.accumulation", "failed", hint="Add every contribution.", snippet="a = 1\nb = 2"),
                  _check("core.order", "passed", "order"))
CORE_PASSES = _report(_check("core.accumulation", "passed"), _check("core.order", "passed", "order"),
                      _check("followups.broadcasting", "passed", "broadcasting", "followups"),
                      _check("followups.properties", "passed", "broadcasting", "followups"),
                      _check("followups.upstream", "failed", "upstream", "followups"))


def test_each_failed_regrade_reveals_one_more_step_question_first():
    clock = Clock()
    session = Practice(clock=clock)
    question = concepts()["accumulation"].question
    first = "\n".join(session.regraded(FAILING))
    assert "practice  00:00 elapsed of 45:00 (45:00 left)" in first
    assert f"question: {question}" in first and "hint:" not in first and "snippet" not in first
    clock.now += 125
    second = "\n".join(session.regraded(FAILING))
    assert "practice  02:05 elapsed of 45:00 (42:55 left)" in second
    assert "hint: Add every contribution." in second and "snippet" not in second
    third = "\n".join(session.regraded(FAILING))
    assert "snippet (run it and compare with torch):\n      a = 1\n      b = 2" in third
    assert "(help step 3 of 3)" in "\n".join(session.regraded(FAILING))  # nothing beyond the snippet


def test_a_request_reveals_the_next_step_without_a_regrade():
    session = Practice(clock=Clock())
    session.regraded(FAILING)
    assert "(help step 2 of 3)" in "\n".join(session.requested())
    assert "(help step 3 of 3)" in "\n".join(session.requested())


def test_follow_ups_come_one_at_a_time_once_core_passes():
    clock = Clock()
    session = Practice(clock=clock, minutes=30)
    shown = "\n".join(session.regraded(CORE_PASSES))
    # Broadcasting passes, so the question asked is the next one: the upstream gradient.
    assert f"Follow-up question 2 of {len(FOLLOW_UPS)}, graded by followups.upstream:" in shown
    assert concepts()["upstream"].question in shown
    # The follow-up's own failing check gets help too, one step at a time.
    assert "  upstream: Backward with an upstream gradient (help step 1 of 3)" in shown and "hint:" not in shown
    clock.now += 31 * 60
    assert "31:00 elapsed of 30:00 (time is up)" in session.timer()


def test_follow_ups_agreed_away_are_not_asked():
    agreed = _report(*[c if not c.id.startswith("followups.broadcasting") and c.id != "followups.properties" else
                       CheckResult(c.id, c.level, c.concept, c.title, "skipped", "not required by the agreed "
                                   "interface (broadcasting=no)") for c in CORE_PASSES.checks])
    shown = "\n".join(Practice(clock=Clock()).regraded(agreed))
    assert f"Follow-up question 1 of {len(FOLLOW_UPS) - 1}, graded by followups.upstream:" in shown


def test_help_wraps_to_the_terminal_comes_in_its_stated_order_and_names_the_op():
    cause = RootCause(None, "`a.relu()`: raises NotImplementedError in the forward pass", "ops",
                      hint="run the reproduction below: the op fails before any gradient is computed",
                      checks=("core.requires_grad",), snippet="import torch\n" + "x = 1  # " + "long " * 30, op="relu")
    report = _report(_check("core.requires_grad", "error", "ops"), causes=(cause,))
    session = Practice(clock=Clock(), width=60)
    first = session.regraded(report)
    question = " ".join(" ".join(first).split())
    assert "ops: Each op's backward rule, here `a.relu()` (help step 1 of 3)" in question
    assert "question: What is the derivative rule of `a.relu()`, and what does it need from forward?" in question
    second = session.regraded(report)
    hint = " ".join(" ".join(second).split())
    # Step 2 shows no snippet, so its hint cannot point "below": it says when the reproduction comes.
    assert "hint: run the reproduction (the next step of help): the op fails" in hint and "below" not in hint
    assert all(len(line) <= 60 for line in second)
    third = session.regraded(report)
    assert "hint: run the reproduction below" in " ".join(" ".join(third).split())  # now it is below
    assert "      x = 1  # " + "long " * 29 + "long" in third  # code is never wrapped


# ---- one session in a terminal ---------------------------------------------------------------------


class Terminal:
    """A command on a pseudo-terminal: what it printed so far, and waiting for a pattern with a deadline."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(argv, cwd=cwd, stdin=slave, stdout=slave, stderr=slave,
                                        start_new_session=True,
                                        env={**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")},
                                             "NO_COLOR": "1"})  # the pty's size decides, as at a real terminal
        os.close(slave)
        self.seen = ""

    def expect(self, pattern: str, timeout: float = 90.0) -> str:
        """Wait for ``pattern`` (a regex) in the output since the last match; return that stretch."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, self.seen)
            if found:
                upto, self.seen = self.seen[:found.end()], self.seen[found.end():]
                return upto
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None:
                raise AssertionError(f"{pattern!r} not seen within {timeout:g} s; got:\n{self.seen[-3000:]}")
            ready, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if ready:
                try:
                    self.seen += os.read(self.master, 65536).decode(errors="replace").replace("\r\n", "\n")
                except OSError:
                    pass

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        os.close(self.master)


@pytest.fixture
def terminal():
    started: list[Terminal] = []

    def start(argv: list[str]) -> Terminal:
        started.append(Terminal(argv, ROOT))
        return started[-1]

    yield start
    for t in started:
        t.close()


def _save(path: Path, text: str) -> None:
    time.sleep(0.05)  # a new modification time even on coarse clocks; the size changes too
    path.write_text(text)


def test_a_practice_session_in_a_terminal(tmp_path, terminal):
    solution = tmp_path / "solution.py"
    buggy = (SOLUTIONS / "overwrite_grad.py").read_text()
    solution.write_text(buggy)
    t = terminal([sys.executable, "-m", "harness.cli", str(solution), "--practice", "--level", "core",
                  "--max-examples", "10"])
    accumulation = re.escape(concepts()["accumulation"].question)
    first = t.expect(r"press h and Enter")
    assert re.search(r"practice  \d\d:\d\d elapsed of 45:00", first)
    assert re.search(rf"accumulation: .*\(help step 1 of 3\)\n    question: {accumulation}", first)
    assert "    hint:" not in first.split("practice  ")[-1]
    t.expect(r"watching .* for changes")
    t.send("h\n")  # a request: the hint, without a regrade
    second = t.expect(r"press h and Enter")
    assert "(help step 2 of 3)" in second and "    hint: " in second and "snippet" not in second
    _save(solution, buggy + "\n# still the same bug\n")  # a failed regrade: the snippet
    third = t.expect(r"press h and Enter")
    assert "(help step 3 of 3)" in third and "    snippet (run it and compare with torch):" in third
    _save(solution, (SOLUTIONS / "correct_core.py").read_text())  # the core level passes: a follow-up
    # Wrapped to the terminal: a space in the text may be a line break on screen.
    fourth = t.expect(r"Follow-up question 1 of \d+, graded by\s+followups.broadcasting,\s+followups.properties")
    assert re.search(r"practice  \d\d:\d\d elapsed of 45:00", fourth)
    t.expect(r"\s+".join(map(re.escape, concepts()["broadcasting"].question.split())))
