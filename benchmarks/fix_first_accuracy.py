"""How often Fix first names the real bug, on engines nobody on the project wrote.

Grades every engine of ``tests/corpus/foreign/`` (candidate-style engines written from the README
and the template alone, and public engines adapted to the contract) at every level, and holds
each one's first root cause (after "implement X" items) to the key written for it before it was
ever graded (``tests/corpus/foreign/KEYS.yaml``). Prints, per set, how many first causes name
the bug, how many wrong first causes are ``confirmed``, how many correct engines fail a check,
and how many grades crashed. The held-out third is counted only, never shown, unless
``--show-holdout``: a corpus tuned until it passes measures the tuning.

    python benchmarks/fix_first_accuracy.py             # all sets, the tuning ones engine by engine
    python benchmarks/fix_first_accuracy.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "foreign"
sys.path.insert(0, str(ROOT))


OP_NAMES = {"index": r"embedding|\[ids\]", "cross_entropy": r"cross.entropy", "max_pool2d": r"max.?pool",
            "batch_norm": r"batch.?norm", "add": r"`a \+ b`|\badd", "mul": r"`a \* b`|\bmul", "matmul": r"@|matmul",
            "sum": r"\bsum\b", "div": r"`a / b`|\bdiv", "pow": r"\*\*|\bpow", "relu": r"relu", "mean": r"\bmean"}
"""How a title names each op (a catalogued bug's title names its op in words)."""


def first_cause(report):
    """The first root cause that is not a member still to write (None when there is none)."""
    return next((c for c in report.root_causes if c.symptom != "missing_member"), None)


def judged(report, key) -> tuple[str, str]:
    """(verdict, what the report said): verdict is right, wrong, or for a correct engine clean / failed."""
    from harness.vocabulary import INFORMATIONAL

    failing = [c.id for c in report.checks if c.outcome in ("failed", "error", "timeout") and c.id not in INFORMATIONAL]
    # An integrity violation is a verdict (the README's rules make some calls torch's autograd), not a crash.
    if report.status not in ("graded", "integrity_violation") or report.diagnosis_error:
        return "crash", f"{report.status}: {report.message or report.diagnosis_error}"
    if key == "correct" or isinstance(key, dict) and key.get("correct") is True:
        # But for the behaviours its manifest says it never attempts.
        failing = [c for c in failing if not isinstance(key, dict) or c not in key.get("unattempted", ())]
        return ("clean", "") if not failing else ("failed", ", ".join(failing[:6]))
    cause = first_cause(report)
    if cause is None:
        return "wrong", "no root cause"
    title = cause.name
    ok = re.search(key["name"], title, re.I) is not None
    if "not" in key and re.search(key["not"], title, re.I):
        ok = False
    if "op" in key:
        ok = ok and (cause.op in key["op"] or any(re.search(OP_NAMES.get(op, re.escape(op)), title, re.I)
                                                  for op in key["op"]))
    confidence = getattr(cause, "confidence", None)
    return ("right" if ok else "wrong"), f"{title}" + (f"  [{confidence}]" if confidence else "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--show-holdout", action="store_true")
    parser.add_argument("--only", action="append", default=[], help="grade only these files (set/name.py)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from harness.grade import GradeOptions, grade
    from harness.sandbox.launch import Launcher

    keys = yaml.safe_load((CORPUS / "KEYS.yaml").read_text())
    holdout = {f"{s}/{f}" for s, files in keys["holdout"].items() for f in files}
    results = {}
    started = time.perf_counter()
    with Launcher("auto") as launcher:
        for name, key in keys["keys"].items():
            if args.only and name not in args.only:
                continue
            report = grade(CORPUS / name, GradeOptions(), launcher)
            verdict, said = judged(report, key)
            confidence = getattr(first_cause(report), "confidence", None) if report.root_causes else None
            results[name] = {"verdict": verdict, "said": said, "confidence": confidence, "holdout": name in holdout}
            if name not in holdout or args.show_holdout:
                print(f"{verdict:6} {name:45} {said}", flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")
    for part, members in (("tuning", [r for r in results.values() if not r["holdout"]]),
                          ("holdout", [r for r in results.values() if r["holdout"]])):
        buggy = [r for r in members if r["verdict"] in ("right", "wrong")]
        correct = [r for r in members if r["verdict"] in ("clean", "failed")]
        right = sum(r["verdict"] == "right" for r in buggy)
        wrong_confirmed = sum(r["verdict"] == "wrong" and r["confidence"] == "confirmed" for r in buggy)
        crashes = sum(r["verdict"] == "crash" for r in members)
        failed = sum(r["verdict"] == "failed" for r in correct)
        share = f"{100 * right / len(buggy):.0f}%" if buggy else "-"
        print(f"{part:8} first cause right {right}/{len(buggy)} ({share}); wrong and confirmed {wrong_confirmed}; "
              f"correct engines failing a check {failed}/{len(correct)}; crashes {crashes}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
