"""Opening a submission's sandbox in a thread while the grader gets ready for it.

Forking the submission's zygote is work for other processes; the grader meanwhile imports what it will need and plans
its checks. Nothing of the submission runs before ``result`` is called: the sandbox
is empty until the grader asks it for a worker.
"""

from __future__ import annotations

import threading
from harness.sandbox.launch import Launcher, Limits, Sandbox

__all__ = ["Opening"]


class Opening:
    """A ``Sandbox`` for one submission: the one given, or one opened in the background from a ``Launcher``."""

    def __init__(self, sandbox: Launcher | Sandbox, limits: Limits) -> None:
        self.owned: list[Sandbox] = []
        """What the grade opened and must close: the sandbox it opened from the launcher (the launcher is the caller's)."""
        self._box: Sandbox | None = sandbox if isinstance(sandbox, Sandbox) else None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if self._box is None:
            self._thread = threading.Thread(target=self._open, args=(sandbox, limits),
                                            name="sandbox-opening", daemon=True)
            self._thread.start()

    def _open(self, launcher: Launcher, limits: Limits) -> None:
        try:
            self._box = launcher.sandbox(limits)
            self.owned.append(self._box)
        except BaseException as exc:  # handed to whoever waits for the sandbox
            self._error = exc

    def result(self) -> Sandbox:
        """The opened sandbox; raises what opening it raised (``SandboxUnavailable``, say)."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._box is not None
        return self._box

    def close(self) -> None:
        """Close what was opened, once it is; never raises (a grade that ends early calls it)."""
        if self._thread is not None:
            self._thread.join()
        for thing in self.owned:
            try:
                thing.close()
            except Exception:
                pass
