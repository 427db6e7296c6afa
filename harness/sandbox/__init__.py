"""Running untrusted submissions: the grader's side (launch), the channel, and the sandboxed side
(evaluator, and the integrity tripwires it installs).

The grader's side is standard library only, so the sandbox can start importing
torch before the grader imports it too.
"""

from harness.sandbox.launch import (OUTPUT_CAP, Launcher, Limits, Sandbox, SandboxUnavailable, Worker, WorkerDied,
                                    WorkerTimeout, bubblewrap_missing)

__all__ = ["Launcher", "Sandbox", "Worker", "WorkerDied", "WorkerTimeout", "Limits", "SandboxUnavailable",
           "OUTPUT_CAP", "bubblewrap_missing"]
