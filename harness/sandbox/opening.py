"""Opening a submission's sandbox in a thread while the grader gets ready for it.

Forking the submission's zygote (and, without a launcher, starting the template) is
work for other processes; the grader meanwhile imports what it will need and plans
its checks. Nothing of the submission runs before ``result`` is called: the sandbox
is empty until the grader asks it for a worker.
"""

from __future__ import annotations

import threading
from typing import Any

from harness.sandbox.launch import Launcher, Limits, Sandbox

__all__ = ["Opening"]


class Opening:
    """A ``Sandbox`` for one submission, opened in the background from a ``Launcher`` (or a new one)."""

    def __init__(self, sandbox: Launcher | Sandbox | None, isolation: str, limits: Limits,
                 start_seconds: float) -> None:
        self.owned: list[Any] = []
        """What the grade opened and must close: the sandbox, then its own launcher if it started one."""
        self._box: Sandbox | None = sandbox if isinstance(sandbox, Sandbox) else None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if self._box is None:
            self._thread = threading.Thread(target=self._open, args=(sandbox, isolation, limits, start_seconds),
                                            name="sandbox-opening", daemon=True)
            self._thread.start()

    def _open(self, launcher: Launcher | None, isolation: str, limits: Limits, start_seconds: float) -> None:
        try:
            if launcher is None:
                launcher = Launcher(isolation, start_seconds=start_seconds)
                self.owned.append(launcher)
            self._box = launcher.sandbox(limits)
            self.owned.insert(0, self._box)
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
