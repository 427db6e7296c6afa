"""What the static scan finds: violations (proof) and review entries (for a person to read)."""

from __future__ import annotations

from dataclasses import dataclass
from harness.report.model import ReviewEntry

__all__ = ["Findings", "Found", "ReviewEntry"]


@dataclass(frozen=True)
class Findings:
    violations: tuple[str, ...] = ()
    """Proof of torch autograd use: score 0, exit 4."""
    review: tuple[ReviewEntry, ...] = ()
    """Suspicious constructs: the grade stands, the interview bar waits for a person."""


class Found:
    """The findings of one file while it is scanned (code handed to exec() included)."""

    def __init__(self) -> None:
        self.violations: set[tuple[int, str, str]] = set()
        self.review: dict[tuple[int | None, str], ReviewEntry] = {}

    def violation(self, line: int, what: str, path: str = "") -> None:
        self.violations.add((line, what, path))

    def proof(self) -> list[tuple[int, str]]:
        """Violations by line, one per path; a path whose longer spelling is flagged on the same line is dropped."""
        paths = {(line, path) for line, _, path in self.violations if path}
        kept: dict[tuple[int, str], str] = {}
        for line, what, path in sorted(self.violations):
            if path and any(l == line and other.startswith(path + ".") for l, other in paths):
                continue
            kept.setdefault((line, path or what), what)
        return sorted((line, what) for (line, _), what in kept.items())

    def flag(self, line: int, construct: str, why: str) -> None:
        self.review.setdefault((line, why), ReviewEntry(line, construct, why))
