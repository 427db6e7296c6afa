"""Running untrusted submissions: the parent side (launch), the channel, and the worker side.

The parent side is standard library only, so a sandbox can start importing
torch before the grader imports it too.
"""

from harness.sandbox.launch import OUTPUT_CAP, Limits, Sandbox, Worker, WorkerDied, WorkerTimeout, bubblewrap_missing

__all__ = ["Sandbox", "Worker", "WorkerDied", "WorkerTimeout", "Limits", "OUTPUT_CAP", "bubblewrap_missing"]
