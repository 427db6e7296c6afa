"""Integrity: the static scan of a submission's source for torch autograd."""

from harness.integrity.scan import Findings, ReviewEntry, inspect_source, scan

__all__ = ["scan", "inspect_source", "Findings", "ReviewEntry"]
