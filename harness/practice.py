"""A practice session: ``grade FILE --watch --practice``.

A timer (45 minutes, as an interview has) shown on every regrade, and help that comes one
step at a time: for each failing concept the question an interviewer would ask first, then
the hint, then the snippet that shows the failure. A step is revealed by each regrade that
still fails, or on request (``h`` and Enter). Once the core level passes, the follow-up
questions come one at a time, each with the checks that grade it, the next one once those pass.

The session only reads reports: it never grades, and a report it cannot use is shown as is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Final, Sequence

import re

from harness.concepts import concept, concepts, explain_line
from harness.ops import OPS
from harness.report.model import CheckResult, Report
from harness.terminal import DEFAULT_WIDTH, wrap
from harness.vocabulary import FAILING

__all__ = ["Practice", "FOLLOW_UPS", "STEPS", "DEFAULT_MINUTES"]

DEFAULT_MINUTES: Final = 45
STEPS: Final = ("question", "hint", "snippet")


@dataclass(frozen=True)
class FollowUp:
    question: str
    checks: tuple[str, ...]


FOLLOW_UPS: Final = (
    FollowUp(concepts()["broadcasting"].question, ("followups.broadcasting", "followups.properties")),
    FollowUp(concepts()["upstream"].question, ("followups.upstream",)),
    FollowUp("Two forward passes and two backward() calls: what do the leaves' grads hold afterwards, and who "
             "resets them?", ("followups.passes",)),
    FollowUp("Backward over a chain of 100,000 nodes: does your graph walk survive it, and in linear time?",
             ("followups.deep_graph",)),
    FollowUp(concepts()["memory"].question, ("followups.no_grad", "followups.memory_release")),
    FollowUp(concepts()["saved_tensors"].question, ("followups.saved_tensors",)),
    FollowUp(concepts()["numerics"].question, ("followups.cross_entropy",)),
)
"""The follow-up questions in the order an interviewer asks them, each with the checks that grade it."""


@dataclass
class _Help:
    concept: str
    revealed: int = 0
    """Steps shown so far (1 = the question)."""
    hint: str = ""
    snippet: str = ""
    op: str | None = None
    """The op the failures are about, when one is (named wherever the texts say "this op")."""


@dataclass
class Practice:
    minutes: float = DEFAULT_MINUTES
    width: int = DEFAULT_WIDTH
    """The columns the help is wrapped to (the terminal's; snippet code is never wrapped)."""
    clock: Callable[[], float] = time.monotonic
    started: float = field(default=-1.0)
    helps: dict[str, _Help] = field(default_factory=dict)
    failing: list[str] = field(default_factory=list)
    """Failing concepts of the last report, the one to fix first first."""
    report: Report | None = None

    def __post_init__(self) -> None:
        if self.started < 0:
            self.started = self.clock()

    # ---- what the session reacts to ----

    def regraded(self, report: Report) -> list[str]:
        """A new report: every concept that still fails reveals one more step. The lines to show."""
        self.report = report
        core = [c for c in report.checks if c.level == "core"]
        if any(c.outcome in FAILING for c in core) or not _core_passes(report):
            self.failing = _failing_concepts(report, core)
        else:  # the follow-up being asked: help for its own failing checks
            current = _current_follow_up(report)
            checks = [c for c in report.checks if current is not None and c.id in current[1].checks]
            self.failing = _failing_concepts(report, checks)
        for name in self.failing:
            help_ = self.helps.setdefault(name, _Help(name))
            help_.hint, help_.snippet, help_.op = _hint_and_snippet(report, name)
            help_.revealed = min(len(STEPS), help_.revealed + 1)
        return self.lines()

    def requested(self) -> list[str]:
        """The candidate asked for more: the first failing concept not fully shown reveals its next step."""
        for name in self.failing:
            help_ = self.helps[name]
            if help_.revealed < len(STEPS):
                help_.revealed += 1
                break
        return self.lines()

    # ---- what it shows ----

    def lines(self) -> list[str]:
        lines = ["", self.timer()]
        if self.report is None:
            return lines
        if _core_passes(self.report):
            lines += self._follow_up_lines(self.report)
        elif not self.failing:
            lines += self._wrap("nothing failed, but the core level is not complete yet (see the report above)")
        for name in self.failing[:3]:
            lines += self._help_lines(self.helps[name])
        if len(self.failing) > 3:
            lines += self._wrap(f"... and {len(self.failing) - 3} more failing concepts once these pass")
        if self.failing:
            lines += self._wrap("(press h and Enter for the next step of help; save the file to grade again)")
        return lines

    def timer(self) -> str:
        elapsed = max(0.0, self.clock() - self.started)
        total = self.minutes * 60
        left = total - elapsed
        tail = f"{_clock(left)} left" if left > 0 else "time is up"
        return f"practice  {_clock(elapsed)} elapsed of {_clock(total)} ({tail})"

    def _wrap(self, text: str, indent: str = "  ", hanging: str | None = None) -> list[str]:
        return wrap(text, self.width, indent, hanging)

    def _help_lines(self, help_: _Help) -> list[str]:
        """The steps revealed so far, in the order they come: the question, the hint, the snippet."""
        c = concept(help_.concept)
        out = self._wrap(f"{help_.concept}: {c.title}{_about(help_.op)} (help step {help_.revealed} of "
                         f"{len(STEPS)})", "  ", "      ")
        out += self._wrap(f"question: {_naming(c.question, help_.op)}", "    ", "      ")
        if help_.revealed >= 2:
            hint = _naming(help_.hint, help_.op) or explain_line(help_.concept)
            if help_.snippet and help_.revealed < 3:
                hint = _NEXT_STEP.sub(r"\1 (the next step of help)", hint)  # not on screen yet: say when
            out += self._wrap(f"hint: {hint}", "    ", "      ")
        if help_.revealed >= 3:
            if help_.snippet:
                out.append("    snippet (run it and compare with torch):")
                out += [f"      {line}".rstrip() for line in help_.snippet.splitlines()]
            else:
                out += self._wrap(f"no snippet for this one: {explain_line(help_.concept)}", "    ", "      ")
        return out

    def _follow_up_lines(self, report: Report) -> list[str]:
        current = _current_follow_up(report)
        if current is None:
            return self._wrap("the core level and every follow-up pass: well done")
        (number, total), follow_up = current
        graded = any(c.id in follow_up.checks for c in report.checks)
        state = "" if graded else " (not graded at this level: grade every level to see them)"
        return [*self._wrap(f"the core level passes. Follow-up question {number} of {total}, graded by "
                            f"{', '.join(follow_up.checks)}{state}:"), *self._wrap(follow_up.question, "    ", "      ")]


_NEXT_STEP: Final = re.compile(r"\b(reproduction|snippet) below\b")
"""A hint that points at the snippet, as the report shows it beneath: in practice the snippet comes one step later."""


def _syntax(op: str | None) -> str | None:
    """How the candidate writes ``op`` (``a @ b``, ``a.relu()``), or None for no op of the table."""
    spec = OPS.get(op or "")
    if spec is None:
        return None
    return spec.render(["a", "b", "c"][:len(spec.slots)])


def _about(op: str | None) -> str:
    syntax = _syntax(op)
    return f", here `{syntax}`" if syntax else ""


def _naming(text: str, op: str | None) -> str:
    """``text`` with "this op" naming the op it is about, when there is one."""
    syntax = _syntax(op)
    return text.replace("this op", f"`{syntax}`") if syntax else text


def _current_follow_up(report: Report) -> tuple[tuple[int, int], FollowUp] | None:
    """The first follow-up whose checks do not all pass ((number, of how many), question), skipping those
    the interview agreed not to need."""
    outcomes = {c.id: c.outcome for c in report.checks}
    asked = [f for f in FOLLOW_UPS if any(outcomes.get(cid) != "skipped" for cid in f.checks)]
    for number, follow_up in enumerate(asked, 1):
        graded = [cid for cid in follow_up.checks if cid in outcomes]
        if not graded or not all(outcomes[cid] in ("passed", "skipped") for cid in graded):
            return (number, len(asked)), follow_up
    return None


def _failing_concepts(report: Report, checks: Sequence[CheckResult]) -> list[str]:
    """Concepts of the failing ``checks``: those of root causes first (in fix-first order), then the rest."""
    known = concepts()
    ids = {c.id for c in checks if c.outcome in FAILING}
    names = [cause.concept for cause in report.root_causes
             if cause.concept in known and ids & set(cause.checks)]
    names += [c.concept for c in checks if c.id in ids and c.concept in known]
    return list(dict.fromkeys(names))


def _hint_and_snippet(report: Report, name: str) -> tuple[str, str, str | None]:
    """A root cause's hint, snippet and op for the concept, else its smallest failing check's (the op of an
    op's own check: ``extensions.op.tanh``)."""
    for cause in report.root_causes:
        if cause.concept == name and cause.checks:
            return str(cause.hint), str(cause.snippet), cause.op
    failing: Sequence[CheckResult] = [c for c in report.checks if c.outcome in FAILING and c.concept == name]
    with_snippet = [c for c in failing if c.details.get("snippet")]
    first = (with_snippet or list(failing) or [None])[0]
    if first is None:
        return "", "", None
    op = first.id.removeprefix("extensions.op.") if first.id.startswith("extensions.op.") else None
    return str(first.details.get("hint", "")), str(first.details.get("snippet", "")), op


def _core_passes(report: Report) -> bool:
    core = [c for c in report.checks if c.level == "core"]
    return bool(core) and all(c.outcome in ("passed", "skipped") for c in core)


def _clock(seconds: float) -> str:
    seconds = int(max(0.0, seconds))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"
