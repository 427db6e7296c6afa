"""Ctrl-C on a real batch: finished results stay, the summary says what is missing, no process survives."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, frontier = set(), [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.add(child)
            frontier.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_keeps_what_finished_and_leaves_nothing_running(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(ROOT / "tests" / "solutions" / "correct_core.py", subs / "a_fast.py")
    # It names the class (a file that cannot define it is refused from its source alone) and then sleeps.
    (subs / "b_slow.py").write_text("import time\ntime.sleep(300)\n\n\nclass Tensor:\n    pass\n")
    out = tmp_path / "out"
    batch = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "batch", str(subs), "-o", str(out), "--level", "core",
         "--max-examples", "5", "-j", "1", "--allow-basic-isolation"],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / "results" / "a_fast.json").exists():
            assert batch.poll() is None and time.monotonic() < deadline, batch.communicate()
            time.sleep(0.2)
        time.sleep(3)  # b_slow is in its sandbox now, asleep in its import
        running = _descendants(batch.pid)
        assert running, "no sandbox was running for b_slow"
        batch.send_signal(signal.SIGINT)
        stdout, stderr = batch.communicate(timeout=30)
    finally:
        if batch.poll() is None:
            batch.kill()
            batch.wait()
    assert batch.returncode == 130, stderr
    assert stderr.splitlines()[-1] == (f"interrupted: 1 of 2 graded, results kept in {out}; "
                                       "run again with --resume to finish")
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["complete"], summary["pending"]) == (False, ["b_slow"])
    assert json.loads((out / "results" / "a_fast.json").read_text())["status"] == "graded"
    assert sorted(p.name for p in (out / "results").iterdir()) == ["a_fast.json", "a_fast.md"]
    time.sleep(0.5)
    assert [pid for pid in running if _alive(pid)] == []
