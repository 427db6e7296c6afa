"""The kill matrix: every catalogued bug graded as a submission, and which checks catch it.

``grade spec audit`` runs it. A bug that no check catches is a hole in the suite; a
check that catches nothing may be redundant; the reference engine must fail nothing.
Each mutant is graded exactly like a submission (in the sandbox, with the same
options), with the levels up to its own and at least core and follow-ups.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from harness.diagnosis.catalogue import BUGS, Bug
from harness.diagnosis.mutants import mutant_source, reference_source
from harness.terminal import DEFAULT_WIDTH, wrap
from harness.vocabulary import FAILING, LEVELS

__all__ = ["Audit", "BugRow", "run_audit", "render_audit", "audit_levels"]


def audit_levels(b: Bug) -> tuple[str, ...]:
    """The levels a bug is graded at: up to its own, and at least core and follow-ups."""
    return LEVELS[: max(LEVELS.index(b.level), 1) + 1]


@dataclass(frozen=True)
class BugRow:
    bug: Bug
    caught_by: tuple[str, ...]
    """Checks the mutant fails (failed, error or timeout)."""
    integrity: tuple[str, ...] = ()
    """Integrity violations found in the mutant: they catch it too."""
    first_cause: str | None = None
    """The bug id of the mutant's first root cause (None when it has none)."""
    status: str = "graded"

    @property
    def caught(self) -> bool:
        return bool(self.caught_by or self.integrity)


@dataclass(frozen=True)
class Audit:
    rows: tuple[BugRow, ...]
    reference_failures: tuple[str, ...]
    checks: tuple[str, ...]
    """Every check that ran, in the order of the plan."""
    options: dict[str, Any] = field(default_factory=dict)
    own: tuple[str, ...] = ()
    """The checks of the spec author's own cases (``--specs``), as ``spec:ID``."""

    @property
    def uncaught(self) -> list[BugRow]:
        return [row for row in self.rows if not row.caught]

    @property
    def ok(self) -> bool:
        return not self.uncaught and not self.reference_failures

    def catches(self) -> dict[str, list[str]]:
        """Check id -> the bugs it catches, for every check that ran."""
        out: dict[str, list[str]] = {c: [] for c in self.checks}
        for row in self.rows:
            for check in row.caught_by:
                out.setdefault(check, []).append(row.bug.id)
        return out

    def own_catches(self) -> dict[str, list[str]]:
        """Bug id -> the author's own cases that catch it, for every bug one of them catches."""
        own = set(self.own)
        return {row.bug.id: cases for row in self.rows if (cases := [c for c in row.caught_by if c in own])}

    def library_misses(self) -> list[str]:
        """The bugs no case of the shipped library catches (targeted checks may): where a new case adds most."""
        own = set(self.own)
        return [row.bug.id for row in self.rows
                if not any(c.startswith("spec:") and c not in own for c in row.caught_by)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "options": self.options,
            "bugs": [{"bug": r.bug.id, "name": r.bug.name, "level": r.bug.level, "caught_by": list(r.caught_by),
                      "integrity": list(r.integrity), "first_root_cause": r.first_cause, "status": r.status}
                     for r in self.rows],
            "uncaught": [r.bug.id for r in self.uncaught],
            "reference_failures": list(self.reference_failures),
            "checks": {check: bugs for check, bugs in self.catches().items()},
            "own_cases": {"cases": list(self.own), "catch": self.own_catches()},
            "library_misses": self.library_misses(),
        }


def run_audit(*, specs: Sequence[Path] = (), max_examples: int = 200, seed: int = 0,
              bugs: Sequence[str] | None = None, progress: Callable[[str], None] | None = None) -> Audit:
    """Grade the reference and every chosen mutant as submissions; the kill matrix of the result."""
    from harness.grade import GradeOptions, grade
    from harness.sandbox.launch import Launcher
    from harness.specs import case_ids, spec_files

    chosen = [b for b in BUGS if bugs is None or b.id in bugs]
    levels = tuple(level for level in LEVELS if any(level in audit_levels(b) for b in chosen))

    def options(levels: tuple[str, ...]) -> GradeOptions:
        return GradeOptions(levels=levels, specs=tuple(specs), max_examples=max_examples, seed=seed)

    rows = []
    # One launcher imports torch once; each mutant still gets a fresh sandbox of its own.
    with tempfile.TemporaryDirectory(prefix="grade-audit-") as folder, Launcher() as sandbox:
        reference = Path(folder) / "reference_engine.py"
        reference.write_text(reference_source(), encoding="utf-8")
        ref = grade(reference, options(levels), sandbox)
        checks = tuple(c.id for c in ref.checks)
        failures = tuple(c.id for c in ref.checks if c.outcome in FAILING)
        if ref.status != "graded":
            failures += (f"status {ref.status}: {ref.message}",)
        for b in chosen:
            if progress:
                progress(b.id)
            path = Path(folder) / f"{b.id}.py"
            path.write_text(mutant_source(b.id), encoding="utf-8")
            report = grade(path, options(audit_levels(b)), sandbox)
            rows.append(BugRow(
                bug=b,
                caught_by=tuple(c.id for c in report.checks if c.outcome in FAILING),
                integrity=report.integrity_violations,
                first_cause=report.root_causes[0].bug if report.root_causes else None,
                status=report.status,
            ))
    own = tuple(f"spec:{case_id}" for f in spec_files(specs) for case_id, _ in case_ids(f))
    return Audit(tuple(rows), failures, checks,
                 {"specs": [str(s) for s in specs], "max_examples": max_examples, "seed": seed}, own)


# ---- rendering --------------------------------------------------------------------------


def render_audit(audit: Audit, width: int = DEFAULT_WIDTH) -> str:
    """The kill matrix as text, ``width`` wide: per bug the checks that catch it, per check the bugs it catches,
    what the author's own cases catch, and the bugs no case of the library catches."""
    o = audit.options
    lines = [*wrap(f"kill matrix: {len(audit.rows)} catalogued bugs against {len(audit.checks)} checks "
                   f"(seed {o.get('seed', 0)}, {o.get('max_examples', 200)} random graphs)", width), ""]
    column = max((len(r.bug.id) for r in audit.rows), default=10) + 2
    hanging = " " * (2 + column + 11)
    lines.append(f"  {'bug':<{column}}{'level':<11}caught by")
    for row in audit.rows:
        lines += wrap(f"{row.bug.id:<{column}}{row.bug.level:<11}{_caught_text(row)}", width, "  ", hanging)
        if row.caught and row.first_cause != row.bug.id:
            lines.append(f"{hanging}(diagnosed as {row.first_cause or 'nothing'})")
    lines += ["", "checks that catch bugs:"]
    catches = audit.catches()
    specs = [c for c in audit.checks if c.startswith("spec:")]
    column = max((len(c) for c in catches if not c.startswith("spec:")), default=10) + 2
    for check, bugs in catches.items():
        if bugs and not check.startswith("spec:"):
            lines += wrap(f"{check:<{column}}{', '.join(bugs)}", width, "  ", " " * (2 + column))
    catching_specs = [c for c in specs if catches.get(c)]
    lines.append(f"  {'spec cases':<{column}}{len(catching_specs)} of {len(specs)} catch at least one bug")
    idle = [c for c, bugs in catches.items() if not bugs and not c.startswith("spec:")]
    if idle:
        lines += wrap(f"{'(none)':<{column}}{', '.join(idle)}", width, "  ", " " * (2 + column))
    if audit.own:
        lines += ["", *_own_lines(audit, width)]
    misses = audit.library_misses()
    if misses:
        lines += ["", *wrap(f"bugs no case of the shipped library catches ({len(misses)}; a case that catches one "
                            f"adds most): {', '.join(misses)}", width, "", "  ")]
    lines.append("")
    if audit.reference_failures:
        lines += wrap(f"THE REFERENCE ENGINE FAILS {len(audit.reference_failures)} CHECK(S): "
                      + ", ".join(audit.reference_failures), width, "", "  ")
    else:
        lines.append("the reference engine fails no check")
    if audit.uncaught:
        lines.append(f"NOT CAUGHT: {len(audit.uncaught)} bug(s) fail no check:")
        for r in audit.uncaught:
            lines += wrap(f"- {r.bug.id}: {r.bug.name}", width, "  ", "    ")
    else:
        lines.append(f"every bug is caught ({len(audit.rows)} of {len(audit.rows)})")
    return "\n".join(lines)


def _own_lines(audit: Audit, width: int) -> list[str]:
    """What the author's own cases catch: each bug with the cases that catch it, and the cases that catch none."""
    catches = audit.own_catches()
    lines = wrap(f"your cases ({len(audit.own)}, from {', '.join(audit.options.get('specs', []))}) catch "
                 f"{len(catches)} of {len(audit.rows)} catalogued bugs" + (":" if catches else ""), width, "", "  ")
    for bug, cases in catches.items():
        lines += wrap(f"{bug}: {', '.join(cases)}", width, "  ", "    ")
    caught_any = {c for cases in catches.values() for c in cases}
    idle = [c for c in audit.own if c not in caught_any]
    if idle:
        lines += wrap(f"catch no bug: {', '.join(idle)}", width, "  ", "    ")
    return lines


def _caught_text(row: BugRow) -> str:
    if not row.caught:
        return "NOTHING"
    targeted = [c for c in row.caught_by if not c.startswith("spec:")]
    specs = len(row.caught_by) - len(targeted)
    parts = targeted + ([f"{specs} spec case{'s' if specs != 1 else ''}"] if specs else [])
    if row.integrity:
        parts.append(f"integrity ({row.integrity[0]}{', ...' if len(row.integrity) > 1 else ''})")
    return ", ".join(parts)
