"""How much faster `grade batch -j 2` is than one `grade FILE` per submission, and its marginal cost.

Run from the repository root: python benchmarks/batch_throughput.py [--count 100] [--jobs 2]
Target: the batch of 100 mixed submissions (correct, buggy, hostile) >= 4x faster than
100 separate `grade FILE` calls with the same options.

The marginal seconds per submission is the batch's wall time divided by the count after
the batch's own start-up (measured as a batch of one) is taken off.
"""

from __future__ import annotations

import argparse
import itertools
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "tests" / "solutions"
MIX = {
    "correct": ["correct_core", "full_correct", "legit_lookalikes"],
    "buggy": ["overwrite_grad", "flipped_transpose", "wrong_operand_mul", "sum_not_expanded", "relu_grad_at_zero",
              "bfs_no_topo", "aliased_grads", "requires_grad_ignored", "mutates_inputs"],
    "hostile": ["hostile_os_exit", "hostile_system_exit", "hostile_forged_stdout", "hostile_patch_allclose",
                "cheat_autograd_grad", "cheat_hidden"],
}
"""Shares: about half correct, a third buggy, a sixth hostile or cheating. Hostile files that only
wait out a timeout (an endless loop, a 1000 s sleep) are left out: they cost the same wall time
in both set-ups and say nothing about the batch."""
WEIGHTS = {"correct": 8, "buggy": 6, "hostile": 3}


def cohort(folder: Path, count: int) -> list[Path]:
    """``count`` submissions cycling through the mix, each under its own name."""
    names = list(itertools.chain.from_iterable(
        itertools.islice(itertools.cycle(MIX[kind]), WEIGHTS[kind]) for kind in MIX))
    paths = []
    for i, name in zip(range(count), itertools.cycle(names)):
        path = folder / f"s{i:03d}_{name}.py"
        shutil.copy(SOLUTIONS / f"{name}.py", path)
        paths.append(path)
    return paths


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds, and CPU seconds of the command and the processes it waited for: the grader and its
    sandboxes' zygotes (where torch is imported), not the workers, which their zygote never waits for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--level", default="core")
    parser.add_argument("--max-examples", type=int, default=50)
    args = parser.parse_args()
    grade = [sys.executable, "-m", "harness.cli"]
    options = ["--level", args.level, "--max-examples", str(args.max_examples)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subs = tmp / "subs"
        subs.mkdir()
        paths = cohort(subs, args.count)
        one = tmp / "one"
        one.mkdir()
        shutil.copy(paths[0], one / paths[0].name)

        single, single_cpu = timed([*grade, "batch", str(one), "-o", str(tmp / "out1"), *options,
                                    "--allow-basic-isolation"])
        batch, batch_cpu = timed([*grade, "batch", str(subs), "-o", str(tmp / "out"), "-j", str(args.jobs),
                                  *options, "--allow-basic-isolation"])
        runs = [timed([*grade, str(p), "--format", "json", *options]) for p in paths]
        separate, separate_cpu = sum(w for w, _ in runs), sum(c for _, c in runs)

    n = args.count
    marginal = (batch - single) / max(1, n - 1)
    print(f"{n} submissions ({', '.join(f'{k} {w}/{sum(WEIGHTS.values())}' for k, w in WEIGHTS.items())}), "
          f"{' '.join(options)}")
    print(f"{'run':<36} {'wall s':>8} {'per sub':>8} {'CPU s':>8} {'per sub':>8}")
    for label, wall, cpu in [(f"{n} x grade FILE", separate, separate_cpu),
                             (f"grade batch -j {args.jobs}", batch, batch_cpu),
                             ("grade batch of one (start-up)", single, single_cpu)]:
        count = 1 if label.endswith("(start-up)") else n
        print(f"{label:<36} {wall:8.1f} {wall / count:8.2f} {cpu:8.1f} {cpu / count:8.2f}")
    print(f"\nspeed-up: {separate / batch:.2f}x wall (target >= 4x), {separate_cpu / batch_cpu:.2f}x CPU; "
          f"marginal {marginal:.2f} s per submission")
    print("(CPU: the grader and its sandboxes' zygotes, workers not counted; unlike wall time it does not\n"
          " depend on what else the machine runs)")


if __name__ == "__main__":
    main()
