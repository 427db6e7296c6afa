"""A made-up cohort of reports for the batch renderers' tests: no grading, every kind of row,
and candidate text that tries to break out of each format. Each is read back from its JSON, as a
batch reads its rows."""

from __future__ import annotations

from typing import Any

from harness.report.model import CheckResult, Interview, Report, ReviewEntry, RootCause

HOSTILE = '<img src=x onerror="alert(1)"></script><script>alert(2)</script>&amp;'
"""Text a submission controls (its messages, output, snippets): must show as text, never run."""


def check(cid: str, concept: str, outcome: str, points: float, max_points: float, message: str = "",
          **details: Any) -> CheckResult:
    return CheckResult(cid, cid.split(".")[0], concept, f"title of {cid}", outcome, message, points, max_points,
                       details=details)


def report(file: str, status: str, checks: tuple[CheckResult, ...], *, message: str = "", review=(),
           violations=(), root_causes=(), output=None) -> Report:
    core = sum(c.points for c in checks)
    interview = Interview(passed=status == "graded" and core >= 8 and not review, bar=8.0, core_score=core,
                          needs_review=bool(review))
    made = Report(
        file=file, status=status, score=core, max_score=10.0, levels={"core": {"score": core, "max_score": 10.0}},
        checks=checks, integrity_violations=tuple(violations), message=message, interview=interview,
        output=output or {"stdout": "", "stderr": ""}, timings={"total": 1.5, "wall": 2.0}, grader_version="0.1.0",
        integrity_review=tuple(review), root_causes=tuple(root_causes), isolation="sandbox",
        source_sha256="ab" * 32,
    )
    return Report.from_dict(made.to_dict())


def cohort() -> dict[str, Report]:
    """Five reports by id: full marks, a bug with a root cause, needs review, a violation, not gradable."""
    full = (check("core.accumulation", "accumulation", "passed", 6, 6), check("core.order", "order", "passed", 4, 4))
    return {
        "ada": report("subs/ada.py", "graded", full),
        "bert": report("subs/bert.py", "graded", (
            check("core.accumulation", "accumulation", "failed", 0, 6, f"a.grad differs {HOSTILE}",
                  snippet=f"x = Tensor(...)  # {HOSTILE}", hint="accumulate with +=",
                  worst={"index": [0], "got": 1.0, "expected": 2.0}),
            check("core.order", "order", "passed", 4, 4)),
            root_causes=[RootCause("overwrite", "overwrite instead of accumulate", explanation=HOSTILE,
                                   hint="use +=", checks=("core.accumulation",), snippet=HOSTILE),
                         RootCause(None, "order failures around x0 + x1", explanation="none catalogued",
                                   checks=("core.order",))],
            output={"stdout": HOSTILE + "\n\x1b[31mred\x00", "stderr": ""}),
        "cleo": report("subs/cleo.py", "graded", full,
                       review=[ReviewEntry(7, "getattr(torch, name)", f"dynamic lookup {HOSTILE}")]),
        "dmitri": report("subs/dmitri.py", "integrity_violation",
                         (check("core.accumulation", "accumulation", "passed", 0, 6),
                          check("core.order", "order", "passed", 0, 4)),
                         violations=[f"line 3: uses torch.autograd {HOSTILE}"]),
        f"=evil": report("subs/=evil.py", "error", (), message=f"importing raised {HOSTILE}\x01"),
    }
