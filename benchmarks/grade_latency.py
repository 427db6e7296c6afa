"""How long `grade` takes, as a multiple of `python -c "import torch"`, and where the time goes.

Run from the repository root: python benchmarks/grade_latency.py [--repeat N]
Targets: core only <= 1.5x, all levels <= 2.5x, with the default number of hypothesis examples.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE_ONLY = ROOT / "tests" / "solutions" / "correct_core.py"
REFERENCE = ROOT / "reference" / "engine.py"


def wall(cmd: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - started, done.stdout


def median_wall(cmd: list[str], repeat: int) -> tuple[float, str]:
    runs = [wall(cmd) for _ in range(repeat)]
    return statistics.median(t for t, _ in runs), runs[-1][1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    grade = [sys.executable, "-m", "harness.cli"]
    baseline, _ = median_wall([sys.executable, "-c", "import torch"], args.repeat)
    rows = [("python -c 'import torch'", baseline, None, None)]
    splits = {}
    for label, target, extra, goal in [
        ("grade correct_core.py --level core", CORE_ONLY, ["--level", "core"], 1.5),
        ("grade reference (all levels)", REFERENCE, [], 2.5),
    ]:
        seconds, out = median_wall([*grade, str(target), "--format", "json", *extra], args.repeat)
        rows.append((label, seconds, seconds / baseline, goal))
        report = json.loads(out)
        splits[label] = report["timings"]
    print(f"{'run':<40} {'median s':>9} {'ratio':>7} {'target':>7}")
    for label, seconds, ratio, goal in rows:
        r = "" if ratio is None else f"{ratio:6.2f}x"
        g = "" if goal is None else f"<={goal}x"
        print(f"{label:<40} {seconds:9.2f} {r:>7} {g:>7}")
    for label, timings in splits.items():
        print(f"\nwhere the time goes: {label}")
        groups: dict[str, float] = {}
        for key, value in timings.items():
            group = "spec cases" if key.startswith("spec:") else key
            groups[group] = groups.get(group, 0.0) + value
        for key, value in sorted(groups.items(), key=lambda kv: -kv[1])[:12]:
            print(f"  {key:<36} {value:7.2f} s")
        print("  (checks run in two parallel lanes, so they add up to more than 'total')")


if __name__ == "__main__":
    main()
