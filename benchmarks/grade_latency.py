"""How long `grade` takes, as a multiple of `python -c "import torch"`, and where the time goes.

Run from the repository root: python benchmarks/grade_latency.py [--repeat N]
Targets: core only <= 1.3x, all levels <= 2.0x, with the default number of hypothesis examples;
and with --watch, the core level's result on screen within 1.0 s of a save, the full report within 2.5 s.

The runs are interleaved (one of each per round), so that a machine whose load changes
meanwhile weighs on every row alike; the load averages before and after are printed, and
"per round" is the median of each round's ratio to that round's ``import torch``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE_ONLY = ROOT / "tests" / "solutions" / "correct_core.py"
REFERENCE = ROOT / "reference" / "engine.py"
WATCH_CORE = 1.0
"""Seconds from a save to the core level's result on screen, at most."""
WATCH_FULL = 2.5
"""Seconds from a save to the full report on screen, at most."""


def wall(cmd: list[str]) -> tuple[float, float, str]:
    """Seconds until the process ended, seconds until its first output (the report), and the output."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    assert proc.stdout is not None
    first = proc.stdout.read1()
    printed = time.perf_counter() - started
    out = first + proc.stdout.read()
    proc.wait()
    return time.perf_counter() - started, printed, out.decode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    grade = [sys.executable, "-m", "harness.cli"]
    commands = [
        ("python -c 'import torch'", [sys.executable, "-c", "import torch"], None),
        ("grade correct_core.py --level core", [*grade, str(CORE_ONLY), "--format", "json", "--level", "core"], 1.3),
        ("grade reference (all levels)", [*grade, str(REFERENCE), "--format", "json"], 2.0),
    ]
    load_before = os.getloadavg()
    seconds: dict[str, list[float]] = {label: [] for label, _, _ in commands}
    printed: dict[str, list[float]] = {label: [] for label, _, _ in commands}
    splits = {}
    for _ in range(args.repeat):
        for label, cmd, goal in commands:
            took, shown, out = wall(cmd)
            seconds[label].append(took)
            printed[label].append(shown)
            if goal is not None:
                splits[label] = json.loads(out)["timings"]
    torch_runs = seconds[commands[0][0]]
    baseline = statistics.median(torch_runs)
    rows = []
    for label, _, goal in commands:
        runs = seconds[label]
        per_round = statistics.median(t / b for t, b in zip(runs, torch_runs))
        shown = None if goal is None else statistics.median(printed[label])
        rows.append((label, statistics.median(runs), statistics.median(runs) / baseline, per_round,
                     "" if goal is None else f"<={goal}x", shown))
    core, full = watch_latency(grade, args.repeat)
    rows.append(("--watch: a save to the core result", core, None, None, f"<={WATCH_CORE} s", None))
    rows.append(("--watch: a save to the full report", full, None, None, f"<={WATCH_FULL} s", None))
    print(f"{'run':<40} {'median s':>9} {'ratio':>7} {'per round':>10} {'target':>7} {'report at':>10}")
    for label, secs, ratio, per_round, target, shown in rows:
        r = "" if ratio is None else f"{ratio:6.2f}x"
        p = "" if per_round is None else f"{per_round:6.2f}x"
        a = "" if shown is None else f"{shown:7.2f} s"
        print(f"{label:<40} {secs:9.2f} {r:>7} {p:>10} {target:>7} {a:>10}")
    print("(median s: until the process ends, as `time` measures; report at: until the report is on stdout)")
    print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f} "
          f"({os.cpu_count()} cores; a busy machine stretches every row)")
    for label, timings in splits.items():
        print(f"\nwhere the time goes: {label}")
        groups: dict[str, float] = {}
        for key, value in timings.items():
            group = "spec cases" if key.startswith("spec:") else key
            groups[group] = groups.get(group, 0.0) + value
        for key, value in sorted(groups.items(), key=lambda kv: -kv[1])[:12]:
            print(f"  {key:<36} {value:7.2f} s")
        print("  (checks run in two parallel lanes, so they add up to more than 'total')")


def watch_latency(grade: list[str], saves: int) -> tuple[float, float]:
    """Median seconds from saving the file to the core level's result, and to the full report, over ``saves`` saves.

    ``grade FILE --watch`` (all levels) shows the core level's result, then says that it is grading
    the rest: that line marks the moment the core result is on screen; the next score line ends the
    full report. Both streams go through one pipe, so the order seen is the order written.
    """
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "solution.py"
        shutil.copy(REFERENCE, path)
        proc = subprocess.Popen([*grade, str(path), "--watch"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env={**os.environ, "COLUMNS": "80"})
        lines: queue.Queue[str] = queue.Queue()
        assert proc.stdout is not None
        threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

        def wait_for(marker: str, start: bool = False) -> None:
            while True:
                line = lines.get(timeout=120)
                if (line.startswith(marker) if start else marker in line):
                    return

        try:
            wait_for("watching")  # the first grade is done and the next sandbox is being opened
            core, full = [], []
            for i in range(saves):
                time.sleep(1.0)  # the candidate edits: the spare sandbox is ready by now
                started = time.perf_counter()
                path.write_text(path.read_text() + f"\n# save {i}\n")
                wait_for("grading the follow-ups")
                core.append(time.perf_counter() - started)
                wait_for("score ", start=True)
                full.append(time.perf_counter() - started)
                wait_for("watching")
        finally:
            proc.kill()
            proc.wait()
    return statistics.median(core), statistics.median(full)


if __name__ == "__main__":
    main()
