"""What a grade produces: check results, the report, and the exit code it implies.

The one result model every stage may import (it imports none): the checks make ``CheckResult``s,
the diagnosis ``RootCause``s, the scoring an ``Interview``, the integrity scan ``ReviewEntry``s, and
every renderer reads the ``Report`` they make up. ``Report.to_dict`` is the published JSON report;
``Report.from_dict`` reads it back into the same report, so a batch renders rows it graded earlier.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Final, Mapping, Protocol

from harness.vocabulary import FAILING, INFORMATIONAL, KINDS, OUTCOMES, STATUSES

__all__ = ["CheckResult", "Evidence", "Interview", "ReviewEntry", "RootCause", "Report", "OUTCOMES", "STATUSES",
           "exit_code", "changes"]

CANDIDATE_TEXT_FIELDS: Final = ("message", "checks[].message", "checks[].details", "output", "root_causes[].snippet",
                                 "root_causes[].explanation", "integrity.violations",
                                 "integrity.review[].construct", "integrity.review[].why")
"""JSON fields whose text may have been written by the submission."""


class Evidence(Protocol):
    """The failing run a check keeps for the diagnosis (``checks.context.Evidence``): the graph program, what
    the candidate's engine did with it, and torch's outcome.

    Run-time objects, opaque to the report: they are never serialised, never compared, and a report read
    back from JSON has none (its checks were diagnosed when it was graded).
    """

    @property
    def program(self) -> Any: ...
    @property
    def observation(self) -> Any: ...
    @property
    def expected(self) -> Any: ...


@dataclass(frozen=True)
class CheckResult:
    id: str
    level: str
    concept: str
    title: str
    outcome: str
    message: str = ""
    points: float = 0.0
    max_points: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    """Worst element, snippet, hint, seed, timings: whatever explains the outcome (JSON data)."""
    seconds: float = 0.0
    diagnosis: tuple[str, ...] = ()
    """Ids of catalogued bugs that reproduce this failure, best fit first."""
    kind: str = "verdict"
    """Why it ended as it did (``vocabulary.KINDS``): a field, so that nothing reads it out of the message."""
    reason: str = ""
    """What the kind is about: the member or feature a check waits for, or, for a failure, a stable code
    of what went wrong (``graph_alive``, ``recursion``, ``input_changed`` ...) where its message is prose."""
    evidence: Evidence | None = field(default=None, compare=False, repr=False)
    """The failing run as objects, for the diagnosis; never serialised."""
    hidden: bool = False
    """From a spec case its author hid (``hidden: true``): graded and counted, shown to the interviewer, left
    out of what the candidate sees (``report.candidate_view``)."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"check {self.id}: unknown kind {self.kind!r}")

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.id, "level": self.level, "concept": self.concept, "title": self.title,
               "outcome": self.outcome, "message": self.message, "points": round(self.points, 2),
               "max_points": round(self.max_points, 2), "details": copy.deepcopy(self.details),
               "seconds": round(self.seconds, 3), "diagnosis": list(self.diagnosis), "kind": self.kind,
               "reason": self.reason}
        if self.hidden:  # only then: every report without hidden cases reads as it always has
            out["hidden"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        return cls(id=data["id"], level=data["level"], concept=data["concept"], title=data.get("title", ""),
                   outcome=data["outcome"], message=data.get("message", ""), points=data.get("points", 0.0),
                   max_points=data.get("max_points", 0.0), details=dict(data.get("details") or {}),
                   seconds=data.get("seconds", 0.0), diagnosis=tuple(data.get("diagnosis") or ()),
                   kind=data.get("kind") or _kind_of(data), reason=data.get("reason", ""),
                   hidden=data.get("hidden") is True)


def _kind_of(data: Mapping[str, Any]) -> str:
    """The kind of a check read from a report written before checks carried one: what its outcome implies."""
    outcome = data.get("outcome")
    if outcome == "not_attempted":
        return "missing_member"
    if outcome == "skipped":
        return "excused"
    return "informational" if data.get("id") in INFORMATIONAL else "verdict"


@dataclass(frozen=True)
class ReviewEntry:
    """A construct that is not proof of cheating but that a person should read before the interview bar passes."""

    line: int | None
    """Line in the submission; None for what was seen at run time with no single line to name."""
    construct: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "construct": self.construct, "why": self.why}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReviewEntry:
        return cls(line=data.get("line"), construct=data.get("construct", ""), why=data.get("why", ""))


@dataclass(frozen=True)
class Interview:
    """The interview verdict: the core level's score against the bar, the gates, and whether a person must
    read the code first."""

    passed: bool
    bar: float
    core_score: float
    needs_review: bool = False
    gates_failed: tuple[str, ...] = ()
    """Core checks the rubric makes gates that ran and did not pass: the bar fails whatever the points."""
    gates_not_attempted: tuple[str, ...] = ()
    """Gates that never ran (a missing method): the bar waits for them."""

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "bar": self.bar, "core_score": self.core_score,
                "needs_review": self.needs_review, "gates_failed": list(self.gates_failed),
                "gates_not_attempted": list(self.gates_not_attempted)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Interview:
        return cls(passed=data.get("passed", False), bar=data.get("bar", 0.0), core_score=data.get("core_score", 0.0),
                   needs_review=data.get("needs_review", False), gates_failed=tuple(data.get("gates_failed") or ()),
                   gates_not_attempted=tuple(data.get("gates_not_attempted") or ()))


MISSING_MEMBER: Final = "missing_member"
"""The symptom of a cause that is a core method the class lacks (its checks wait rather than fail)."""


@dataclass(frozen=True)
class RootCause:
    """Failures grouped by what explains them: a catalogued bug (``bug``), a wrong rule named by ``op``,
    ``operand`` and ``symptom``, a group around the op nearest to what went wrong, or a core method the
    class lacks (symptom ``missing_member``, the checks that wait for it in ``waiting``)."""

    bug: str | None
    name: str
    concept: str | None = None
    explanation: str = ""
    hint: str = ""
    checks: tuple[str, ...] = ()
    """The failing checks it explains."""
    snippet: str = ""
    """The smallest failing graph as a runnable snippet ('' when none ran a graph)."""
    op: str | None = None
    operand: str | None = None
    symptom: str | None = None
    points: float = 0.0
    """The points its checks cost."""
    level: str | None = None
    """The lowest level among its checks; None when it explains none."""
    waiting: tuple[str, ...] = ()
    """A missing member's core checks, not attempted until it is written."""
    points_waiting: float = 0.0
    confidence: str | None = None
    """``vocabulary.CONFIDENCES``: how sure the diagnosis is; None for a member still to write."""
    probes: tuple[dict[str, Any], ...] = ()
    """The experiments that decided it: each ``{"probe", "graph", "predicted", "observed"}`` (what the cause
    predicts for the graph and what the engine did: ``pass`` or ``fail``), and the rivals it ruled out."""

    @property
    def key(self) -> str | None:
        """What names the cause across grades: a catalogued bug by its id, anything else by its name."""
        return self.bug or self.name

    @property
    def title(self) -> str:
        """The name as a reader sees it: said to be likely when no experiment confirmed it."""
        name = str(self.name or self.bug or "unnamed cause")
        return f"likely: {name}" if self.confidence == "likely" else name

    def to_dict(self) -> dict[str, Any]:
        # The key order is the one the diagnosis has always written: it differs by kind of cause.
        out: dict[str, Any] = {"bug": self.bug, "name": self.name, "concept": self.concept,
                               "explanation": self.explanation, "hint": self.hint, "checks": list(self.checks)}
        missing = self.symptom == MISSING_MEMBER
        if missing:
            out["waiting"] = list(self.waiting)
        out.update(snippet=self.snippet, op=self.op, operand=self.operand, symptom=self.symptom)
        if missing:
            out.update(points=self.points, points_waiting=self.points_waiting)
        elif self.bug is None:
            out.update(level=self.level, points=self.points)
        else:
            out["points"] = self.points
            if self.level is not None:
                out["level"] = self.level
        if not missing:
            out.update(confidence=self.confidence, probes=copy.deepcopy(list(self.probes)))
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RootCause:
        return cls(bug=data.get("bug"), name=data.get("name", ""), concept=data.get("concept"),
                   explanation=data.get("explanation", ""), hint=data.get("hint", ""),
                   checks=tuple(data.get("checks") or ()), snippet=data.get("snippet", ""), op=data.get("op"),
                   operand=data.get("operand"), symptom=data.get("symptom"), points=data.get("points", 0.0),
                   level=data.get("level"), waiting=tuple(data.get("waiting") or ()),
                   points_waiting=data.get("points_waiting", 0.0), confidence=data.get("confidence"),
                   probes=tuple(dict(p) for p in data.get("probes") or ()))


@dataclass(frozen=True)
class Report:
    file: str
    status: str
    score: float
    max_score: float
    levels: dict[str, dict[str, float]]
    """Per level graded: ``{"score", "max_score"}``."""
    checks: tuple[CheckResult, ...]
    integrity_violations: tuple[str, ...] = ()
    message: str = ""
    """Why a submission could not be graded (status error/timeout)."""
    seed: int = 0
    interview: Interview | None = None
    """None when the core level was not graded."""
    output: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    grader_version: str = ""
    integrity_review: tuple[ReviewEntry, ...] = ()
    """Suspicious constructs that are not proof."""
    root_causes: tuple[RootCause, ...] = ()
    """Failures grouped by the bug that explains them, the one to fix first first."""
    isolation: str = "basic"
    """How the submission was confined: "sandbox" (bubblewrap) or "basic"."""
    isolation_note: str = ""
    """Why the isolation is only basic, when it is."""
    source_sha256: str = ""
    diagnosis_error: str = ""
    """Why the root causes are missing when the diagnosis itself failed; the verdicts and score stand."""
    source_note: str = ""
    """How the source was read when it was not simply the file: a notebook's code cells, what was left out."""
    variant: str = "tensor"
    """Which reading of the task was graded: "tensor" (the whole engine) or "function" (torch.autograd.Functions)."""
    agreements: dict[str, str] = field(default_factory=dict)
    """What the interview agreed about the interface (``broadcasting``, ``upstream``, ``second_backward``);
    empty when nothing departs from the contract."""

    def saved_tensors(self) -> dict[str, Any] | None:
        """The saved-tensor audit's table (kept vs needed per graph, in bytes), when the audit ran."""
        for check in self.checks:
            if check.id == "followups.saved_tensors" and isinstance(check.details.get("saved_tensors"), dict):
                return check.details["saved_tensors"]
        return None

    def to_dict(self) -> dict[str, Any]:
        """The JSON report. The fields of the published contract always exist; others may be added."""
        return {
            "file": self.file,
            "status": self.status,
            "message": self.message,
            "score": round(self.score, 2),
            "max_score": round(self.max_score, 2),
            "levels": {k: {"score": round(v["score"], 2), "max_score": round(v["max_score"], 2)}
                       for k, v in self.levels.items()},
            "interview": self.interview.to_dict() if self.interview is not None else {},
            "checks": [c.to_dict() for c in self.checks],
            "integrity": {"violations": list(self.integrity_violations),
                          "review": [entry.to_dict() for entry in self.integrity_review]},
            "root_causes": [cause.to_dict() for cause in self.root_causes],
            "diagnosis_error": self.diagnosis_error,
            "isolation": self.isolation,
            "isolation_note": self.isolation_note,
            "source_sha256": self.source_sha256,
            "source_note": self.source_note,
            "agreements": dict(self.agreements),
            "variant": self.variant,
            "saved_tensors": copy.deepcopy(self.saved_tensors()),
            "seed": self.seed,
            "output": dict(self.output),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "grader_version": self.grader_version,
            # Text in these fields may come from the submission (its exceptions, output,
            # values): a consumer must escape it wherever it shows it.
            "candidate_text": list(CANDIDATE_TEXT_FIELDS),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """The report a JSON report (``to_dict``) describes: ``Report.from_dict(r.to_dict()).to_dict() ==
        r.to_dict()``. Derived fields (``saved_tensors``, ``candidate_text``) are not read; nothing a check kept
        at run time (``evidence``) comes back. Raises KeyError or TypeError for a mapping that is no report."""
        integrity = data.get("integrity") or {}
        interview = data.get("interview") or {}
        return cls(
            file=data.get("file", ""), status=data["status"], score=data["score"], max_score=data["max_score"],
            levels={str(k): {"score": v["score"], "max_score": v["max_score"]}
                    for k, v in (data.get("levels") or {}).items()},
            checks=tuple(CheckResult.from_dict(c) for c in data.get("checks") or ()),
            integrity_violations=tuple(integrity.get("violations") or ()),
            message=data.get("message", ""), seed=data.get("seed", 0),
            interview=Interview.from_dict(interview) if interview else None,
            output=dict(data.get("output") or {}), timings=dict(data.get("timings") or {}),
            grader_version=data.get("grader_version", ""),
            integrity_review=tuple(ReviewEntry.from_dict(e) for e in integrity.get("review") or ()),
            root_causes=tuple(RootCause.from_dict(c) for c in data.get("root_causes") or ()),
            isolation=data.get("isolation", "basic"), isolation_note=data.get("isolation_note", ""),
            source_sha256=data.get("source_sha256", ""), diagnosis_error=data.get("diagnosis_error", ""),
            source_note=data.get("source_note", ""), variant=data.get("variant", "tensor"),
            agreements=dict(data.get("agreements") or {}),
        )


def changes(before: Report, after: Report) -> list[str]:
    """What changed between two grades of one file, for ``--watch``: one line per kind of change.

    Only what both grades cover is compared: the core level's early report against the last
    full one compares the core checks and the core score.
    """
    old = {c.id: c.outcome for c in before.checks}
    lines = []
    for verb, verbs, test in (("pass", "passes", lambda o, n: n == "passed" and o != "passed"),
                              ("fail", "fails", lambda o, n: n in FAILING and o == "passed")):
        ids = [c.id for c in after.checks if c.id in old and test(old[c.id], c.outcome)]
        if ids:
            shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            counted = f"1 check now {verbs}" if len(ids) == 1 else f"{len(ids)} checks now {verb}"
            lines.append(f"{counted}: {shown}")
    levels = [level for level in after.levels if level in before.levels]
    if set(levels) == set(before.levels) == set(after.levels):
        label, was, now = "score", before.score, after.score
    else:
        label = " + ".join(levels)
        was, now = (sum(r.levels[level]["score"] for level in levels) for r in (before, after))
    delta = now - was
    if levels and abs(delta) >= 0.05:
        lines.append(f"{label} {was:.1f} -> {now:.1f} ({delta:+.1f})")
    return lines or ["no check changed its outcome"]


def exit_code(report: Report) -> int:
    """0 every attempted check passed; 1 some check failed; 3 not gradable; 4 integrity violation.

    Informational checks (``levels.INFORMATIONAL``) count in the score, never in the exit code.
    """
    if report.status == "integrity_violation":
        return 4
    if report.status in ("error", "timeout"):
        return 3
    if any(c.outcome in FAILING and c.id not in INFORMATIONAL for c in report.checks):
        return 1
    return 0
