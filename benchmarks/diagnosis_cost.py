"""What the diagnosis adds to a grade: its experiments on the engine, and replaying failing graphs through the
mutants and the wrong rules.

Run from the repository root: python benchmarks/diagnosis_cost.py [FILE ...]
Grades each buggy file (default: the corpus in tests/corpus/bugs/) in this process and
prints the diagnosis time against the whole grade. Target: <= 10% of the grade.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--max-examples", type=int, default=200)
    args = parser.parse_args()

    import torch

    from harness.diagnosis import replay_cache
    from harness.grade import GradeOptions, grade
    from harness.sandbox.launch import Sandbox

    torch.set_num_threads(1)  # as the command line does
    files = args.files or sorted((ROOT / "tests" / "corpus" / "bugs").glob("*.py"))
    print(f"{'file':<36} {'failing':>7} {'causes':>6} {'grade s':>8} {'diagnosis s':>11} {'share':>6}")
    total_grade = total_diagnosis = 0.0
    with Sandbox.launch() as sandbox:
        for path in files:
            replay_cache.forget_all()  # each grade replays afresh, as one `grade FILE` does (a batch keeps them)
            report = grade(path, GradeOptions(max_examples=args.max_examples), sandbox)
            failing = sum(c.outcome in ("failed", "error", "timeout") for c in report.checks)
            t = report.timings["total"]
            d = report.timings.get("diagnosis", 0.0) + report.timings.get("experiments", 0.0)
            total_grade, total_diagnosis = total_grade + t, total_diagnosis + d
            print(f"{path.name:<36} {failing:>7} {len(report.root_causes):>6} {t:8.2f} {d:11.3f} {d / t:6.1%}")
    print(f"{'all':<36} {'':>7} {'':>6} {total_grade:8.2f} {total_diagnosis:11.3f} "
          f"{total_diagnosis / total_grade:6.1%}   (target <= 10%)")


if __name__ == "__main__":
    main()
