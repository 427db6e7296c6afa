"""The rubric: how many points each check is worth. Data, not code."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from harness.agreements import Agreements, agreements_from_mapping
from harness.errors import HarnessError
from harness.report.model import Interview
from harness.vocabulary import FAILING, LEVELS

__all__ = ["Rubric", "load_rubric", "DEFAULT_RUBRIC"]

DEFAULT_RUBRIC = "rubric.yaml"
KEYS = ("levels", "weights", "interview_bar", "gates", "agreements")


@dataclass(frozen=True)
class Rubric:
    levels: Mapping[str, float]
    weights: Sequence[tuple[str, float]]
    interview_bar: float
    gates: Sequence[str] = ()
    """Core check ids (or patterns) that must pass for the interview bar, whatever the points."""
    agreements: Agreements = Agreements()
    """What the interview agreed about the interface (``--agree`` overrides it term by term)."""

    def weight(self, check_id: str) -> float:
        return next((w for pattern, w in self.weights if fnmatch.fnmatchcase(check_id, pattern)), 1.0)

    def allot(self, checks: Sequence[tuple[str, str]], excused: frozenset[str] | set[str] = frozenset()
              ) -> dict[str, float]:
        """Points per check id, given (id, level) pairs: each level's points shared by weight.

        ``excused`` checks (not required by the interview's agreements) get nothing, and the
        level's points are shared among the others.
        """
        points: dict[str, float] = {cid: 0.0 for cid, _ in checks if cid in excused}
        for level in LEVELS:
            ids = [cid for cid, lvl in checks if lvl == level and cid not in excused]
            total = sum(self.weight(cid) for cid in ids)
            for cid in ids:
                points[cid] = self.levels.get(level, 0.0) * self.weight(cid) / total if total else 0.0
        return points

    def interview(self, core: Mapping[str, float] | None, checks: Sequence[Any], *, graded: bool,
                  needs_review: bool, excused: frozenset[str] | set[str] = frozenset()) -> Interview | None:
        """The interview verdict: the core level's score against the bar, and whether a person must read the code.

        ``checks`` are the scored results; only the core level decides the interview. A gate
        check that was run and did not pass fails the interview whatever the points; a gate
        the grade did not plan (a custom rubric's pattern that matches nothing) is ignored, and so is one
        ``excused`` (not required by the agreements, or not credited in the graded variant).
        """
        if core is None:
            return None
        bar = self.interview_bar * core["max_score"]
        gates = [c for c in checks if c.level == "core" and c.outcome != "passed" and c.id not in excused
                 and any(fnmatch.fnmatchcase(c.id, gate) for gate in self.gates)]
        # A gate that never ran (a missing method) did not fail: it waits, and the bar waits with it.
        gates_failed = [c.id for c in gates if c.outcome in FAILING]
        gates_waiting = [c.id for c in gates if c.id not in gates_failed]
        passed = (graded and core["score"] >= bar - 1e-9 and not gates_failed and not gates_waiting
                  and not needs_review)
        return Interview(passed=passed, bar=round(bar, 2), core_score=round(core["score"], 2),
                         needs_review=needs_review, gates_failed=tuple(gates_failed),
                         gates_not_attempted=tuple(gates_waiting))


def load_rubric(path: Path | None = None) -> Rubric:
    if path is None:
        text = resources.files("harness").joinpath("data", DEFAULT_RUBRIC).read_text()
        where = "the default rubric"
    else:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise HarnessError(f"{path}: cannot read the rubric: {exc.strerror}") from None
        where = str(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise HarnessError(f"{where}{line}: not valid YAML") from None
    return _parse(data, where)


def _parse(data: Any, where: str) -> Rubric:
    if not isinstance(data, dict):
        raise HarnessError(f"{where}: a rubric is a mapping with 'levels', 'weights', 'interview_bar', 'gates' and "
                          "'agreements'")
    unknown = set(data) - set(KEYS)
    if unknown:
        raise HarnessError(f"{where}: unknown key {sorted(unknown)[0]!r} (allowed: {', '.join(KEYS)})")
    levels = data.get("levels") or {}
    if not isinstance(levels, dict) or set(levels) - set(LEVELS):
        raise HarnessError(f"{where}: 'levels' maps {', '.join(LEVELS)} to points")
    weights = data.get("weights") or {}
    if not isinstance(weights, dict):
        raise HarnessError(f"{where}: 'weights' maps check ids or patterns to numbers")
    for key, value in [*levels.items(), *weights.items()]:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise HarnessError(f"{where}: {key!r} must be a non-negative number, got {value!r}")
    bar = data.get("interview_bar", 0.8)
    if not isinstance(bar, (int, float)) or not 0 <= bar <= 1:
        raise HarnessError(f"{where}: 'interview_bar' must be a fraction between 0 and 1")
    gates = data.get("gates") or []
    if not isinstance(gates, list) or not all(isinstance(g, str) and g for g in gates):
        raise HarnessError(f"{where}: 'gates' is a list of check ids or patterns")
    outside = [g for g in gates if not g.startswith(("core.", "spec:core."))]
    if outside:
        raise HarnessError(f"{where}: gate {outside[0]!r} is not a core check: only the core level decides the "
                           "interview")
    agreed = data.get("agreements") or {}
    if not isinstance(agreed, dict):
        raise HarnessError(f"{where}: 'agreements' maps broadcasting, upstream and second_backward to what was agreed")
    return Rubric({k: float(v) for k, v in levels.items()}, [(str(k), float(v)) for k, v in weights.items()], float(bar),
                  tuple(gates), agreements_from_mapping(agreed, f"{where}: agreements"))
