"""Integrity: the static allowlist scan of a submission's source and the evidence it leaves.

The runtime tripwires run in the worker (harness/sandbox/tripwires.py); the probes that
time and measure a submission are checks (harness/checks/probes.py).
"""

from harness.integrity.scan import Findings, ReviewEntry, inspect_source, member_line

__all__ = ["inspect_source", "member_line", "Findings", "ReviewEntry"]
