"""Fix first on engines nobody on the project wrote: candidate-style engines written from the README and the
template alone, and public engines adapted to the contract (``tests/corpus/foreign/``).

``KEYS.yaml`` says, for each engine, what its first root cause (after "implement X" items) must say; it
was written from the engines' manifests before any of them was graded. A third of each set is held
out: its figures are checked only in aggregate, and its reports are never printed by these tests.
Every file is graded once, at every level, as a candidate grades it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.grade import GradeOptions, grade
from harness.report.formats import FORMATS, render
from harness.vocabulary import INFORMATIONAL

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "foreign"
KEYS = yaml.safe_load((CORPUS / "KEYS.yaml").read_text())
HOLDOUT = {f"{folder}/{name}" for folder, names in KEYS["holdout"].items() for name in names}
OP_NAMES = {"index": r"embedding|\[ids\]", "cross_entropy": r"cross.entropy", "max_pool2d": r"max.?pool",
            "batch_norm": r"batch.?norm", "add": r"`a \+ b`|\badd", "mul": r"`a \* b`|\bmul", "matmul": r"@|matmul",
            "sum": r"\bsum\b", "div": r"`a / b`|\bdiv", "pow": r"\*\*|\bpow", "relu": r"relu", "mean": r"\bmean"}
"""How a title names each op (a catalogued bug's title names its op in words)."""
RUN_SNIPPETS = Path(__file__).resolve().parent / "data" / "run_snippets.py"
REACHED = {"tuning": 53, "holdout": 13}
"""Engines whose first cause names the real bug, of 64 and 28: the figures reached (55 tuning, less two whose
failures need what ran before them in the process: see ``HISTORY_BOUND``) (the goal is 90% of each,
``benchmarks/fix_first_accuracy.py`` prints where it stands); a fall below them fails."""
ALSO_REAL = {
    "public2/JhihYangWu_minigrad.py": "relu's backward multiplies by x >= 0: gradient 1 at zero, where torch "
                                      "gives 0 (relu_zero in its manifest, checked against torch)",
    "blind_b/cand15.py": "broadcasting not attempted: a broadcast operand's gradient keeps the result's shape, "
                         "which torch reduces",
    **{f"blind_f/{name}": "broadcasting not attempted (its manifest says same-shape operands only), but the forward "
                          "pass accepts broadcast operands through torch and their gradients come back unreduced: the "
                          "broadcasting follow-up fails unless the interview agrees it away (--agree broadcasting=no)"
       for name in ("adjoint_map.py", "slots_tensor.py", "graph_visitor.py", "engine_object.py")},
}
"""Engines whose confirmed first cause is not the bug its key names but another real bug of the engine."""
HISTORY_BOUND = {"blind_e/side_table.py": "a module-level table keyed by id() keeps stale entries: which later graphs "
                                         "go wrong depends on which ids Python reuses; the state experiment says so in "
                                         "most grades, but where the graph it reruns also looks like an overwrite it "
                                         "does not, and the snippets then shown pass alone",
                 "blind_f/ssa_values.py": "its order comes from names drawn from a module-wide counter: a graph goes "
                                         "wrong when its names change digit count (%9 to %10), so a snippet run alone, "
                                         "with the counter at 0, passes (an open defect: every snippet would have to be "
                                         "run first in a fresh worker before the report shows it)"}
"""Tuning engines whose failures need what ran before them in the process, where the state experiment does not say so."""
HELD_OUT_SNIPPETS = 1
"""Held-out root causes whose snippet runs to its end without the failure (counted, never read, so never tuned)."""
HELD_OUT_CONFIRMED = 6
"""Held-out engines whose confirmed first cause is not the key's bug (counted, never read)."""


def test_every_engine_has_a_key_and_every_key_an_engine():
    files = {f"{p.parent.name}/{p.name}" for p in CORPUS.glob("*/*.py")}
    assert files == set(KEYS["keys"]) and HOLDOUT <= files


@pytest.fixture(scope="module")
def reports(launcher, short_deep_chain):
    return {name: grade(CORPUS / name, GradeOptions(max_examples=20), launcher) for name in KEYS["keys"]}


def _first(report):
    return next((c for c in report.root_causes if c.symptom != "missing_member"), None)


def _names_the_bug(report, key) -> bool:
    cause = _first(report)
    if cause is None:
        return False
    ok = re.search(key["name"], cause.name, re.I) is not None and not (
        "not" in key and re.search(key["not"], cause.name, re.I))
    if "op" in key:
        ok = ok and (cause.op in key["op"] or any(re.search(OP_NAMES.get(op, re.escape(op)), cause.name, re.I)
                                                  for op in key["op"]))
    return ok


def _failing(report) -> list[str]:
    return [c.id for c in report.checks if c.outcome in ("failed", "error", "timeout") and c.id not in INFORMATIONAL]


def test_no_engine_crashes_the_grader_or_its_diagnosis(reports):
    # An integrity violation is a verdict, not a crash: one held-out engine calls torch.nn.grad's conv2d formulas
    # for its conv2d backward, which the README's rules make torch's autograd.
    # Named only where tuned: pytest prints the asserted list itself when it fails.
    broken = [name if name not in HOLDOUT else "(held out)" for name, r in reports.items()
              if r.status not in ("graded", "integrity_violation") or r.diagnosis_error]
    assert not broken, broken
    for report in reports.values():
        for fmt in FORMATS:
            assert render(report, fmt)


def _correct(key) -> bool:
    return key == "correct" or isinstance(key, dict) and key.get("correct") is True


def test_the_correct_engines_fail_no_check(reports):
    """But the behaviours an engine's manifest says it never attempts (the memory follow-up has no member
    whose absence would make it "not attempted")."""
    failing = {name: [c for c in _failing(reports[name]) if not isinstance(key, dict) or c not in key.get("unattempted", ())]
               for name, key in KEYS["keys"].items() if _correct(key)}
    failed = {n if n not in HOLDOUT else "(held out)": f if n not in HOLDOUT else len(f) for n, f in failing.items() if f}
    assert not failed, failed


@pytest.mark.parametrize("part", ["tuning", "holdout"])
def test_the_first_cause_names_the_real_bug(reports, part):
    buggy = [name for name, key in KEYS["keys"].items() if not _correct(key) and (name in HOLDOUT) == (part == "holdout")]
    missed = [name for name in buggy if not _names_the_bug(reports[name], KEYS["keys"][name])]
    shown = missed if part == "tuning" else f"{len(missed)} held-out engines"
    assert len(buggy) - len(missed) >= REACHED[part], shown


def test_a_wrong_first_cause_is_never_confirmed(reports):
    wrong = [name for name, key in KEYS["keys"].items()
             if not _correct(key) and not _names_the_bug(reports[name], key)
             and _first(reports[name]) is not None and _first(reports[name]).confidence == "confirmed"]
    # Computed apart: an assertion on the expression would print the held-out names it subtracts.
    # A history-bound engine's results do depend on what ran before: the state claim is true of it.
    unexpected = sorted(set(wrong) - HOLDOUT - set(ALSO_REAL) - set(HISTORY_BOUND))
    assert not unexpected, unexpected
    held_out = len(set(wrong) & HOLDOUT)  # a count: the assertion must not print which engines
    assert held_out <= HELD_OUT_CONFIRMED, f"{held_out} held-out engines"


def test_every_snippet_fails_as_its_report_says(reports, tmp_path):
    """Each root cause's snippet, run on its own, ends in the failure its report names: an assertion when the
    check compared values, the same exception when it raised."""
    shown = [(name, cause) for name, report in reports.items() for cause in report.root_causes if cause.snippet]
    done = subprocess.run([sys.executable, str(RUN_SNIPPETS)], input=json.dumps([c.snippet for _, c in shown]),
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    ended = json.loads(done.stdout.strip().splitlines()[-1])
    wrong = []
    for (name, cause), how in zip(shown, ended, strict=True):
        raised = re.search(r"# raises (\w+)", cause.snippet)
        expected = raised.group(1) if raised else "AssertionError"
        if how != expected:  # a held-out engine's failure says only how its snippet ended
            if name not in HISTORY_BOUND:
                wrong.append((name, cause.name, how) if name not in HOLDOUT else ("(held out)", how, expected))
    held_out = [w for w in wrong if w[0] == "(held out)"]
    assert shown and len(wrong) - len(held_out) == 0 and len(held_out) <= HELD_OUT_SNIPPETS, wrong
