"""Combining two partial grades (--watch grades core first) and saying what changed between saves."""

from harness.report.model import CheckResult, Report, changes, combine


def _report(level_scores: dict[str, tuple[float, float]], outcomes: dict[str, str], causes=()) -> Report:
    checks = tuple(CheckResult(cid, cid.split(".")[0], "c", "t", outcome, points=1.0 if outcome == "passed" else 0.0,
                               max_points=1.0) for cid, outcome in outcomes.items())
    levels = {level: {"score": s, "max_score": m} for level, (s, m) in level_scores.items()}
    return Report(file="s.py", status="graded", score=sum(s for s, _ in level_scores.values()),
                  max_score=sum(m for _, m in level_scores.values()), levels=levels, checks=checks,
                  interview={"passed": True}, root_causes=tuple(causes))


def test_combining_keeps_each_level_once_and_adds_the_scores():
    core = _report({"core": (2.0, 3.0)}, {"core.a": "passed", "core.b": "passed", "core.c": "failed"},
                   [{"bug": "overwrite", "name": "o", "checks": ["core.c"], "points": 1.0}])
    rest = _report({"core": (0.0, 3.0), "followups": (1.0, 2.0)}, {"followups.a": "passed", "followups.b": "failed"},
                   [{"bug": "overwrite", "name": "o", "checks": ["followups.b"], "points": 1.0}])
    both = combine(core, rest)
    assert both.levels == {"core": {"score": 2.0, "max_score": 3.0}, "followups": {"score": 1.0, "max_score": 2.0}}
    assert (both.score, both.max_score) == (3.0, 5.0)
    assert [c.id for c in both.checks] == ["core.a", "core.b", "core.c", "followups.a", "followups.b"]
    assert both.root_causes == ({"bug": "overwrite", "name": "o", "checks": ["core.c", "followups.b"],
                                 "points": 2.0},)
    assert both.interview == core.interview


def test_changes_name_the_checks_that_flipped_and_the_score():
    before = _report({"core": (1.0, 3.0)}, {"core.a": "passed", "core.b": "failed", "core.c": "error"})
    after = _report({"core": (2.0, 3.0)}, {"core.a": "failed", "core.b": "passed", "core.c": "passed"})
    assert changes(before, after) == ["2 checks now pass: core.b, core.c", "1 check now fails: core.a",
                                      "score 1.0 -> 2.0 (+1.0)"]
    assert changes(after, after) == ["no check changed its outcome"]
