"""Integrity: the static scan of a submission's source for torch autograd."""

from harness.integrity.scan import scan

__all__ = ["scan"]
