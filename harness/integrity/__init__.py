"""Integrity: the static allowlist scan of a submission's source and the evidence it leaves.

The runtime tripwires and the audit hook run in the worker (``harness/sandbox/worker/``);
the probes that time and measure a submission are checks (``harness/checks/probes.py``).
Nothing is imported here: the worker reads ``allowlist`` without the scanner.
"""
