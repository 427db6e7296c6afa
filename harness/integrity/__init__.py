"""Integrity: the static allowlist scan of a submission's source and the runtime tripwires' evidence."""

from harness.integrity.scan import Findings, ReviewEntry, inspect_source, member_line

__all__ = ["inspect_source", "member_line", "Findings", "ReviewEntry"]
