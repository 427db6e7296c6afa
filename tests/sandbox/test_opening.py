"""Opening a submission's sandbox in a thread while the grader gets ready."""

import threading

import pytest

from harness.sandbox.launch import Limits, SandboxUnavailable
from harness.sandbox.opening import Opening


class _Box:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


class _Launcher:
    """Opens a sandbox only once the test lets it: the caller goes on meanwhile."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error, self.go, self.box = error, threading.Event(), _Box()

    def sandbox(self, limits: Limits) -> _Box:
        assert self.go.wait(10)
        if self.error is not None:
            raise self.error
        return self.box


def test_the_sandbox_opens_in_the_background_and_is_the_grades_to_close():
    launcher = _Launcher()
    opening = Opening(launcher, Limits())  # returns before the sandbox is open
    launcher.go.set()
    assert opening.result() is launcher.box
    assert opening.owned == [launcher.box]  # the launcher is the caller's: only the sandbox is closed
    opening.close()
    assert launcher.box.closed


def test_a_sandbox_that_cannot_open_raises_where_the_grade_waits_for_it():
    launcher = _Launcher(SandboxUnavailable("bubblewrap refused"))
    opening = Opening(launcher, Limits())
    launcher.go.set()
    with pytest.raises(SandboxUnavailable, match="bubblewrap refused"):
        opening.result()
    opening.close()  # nothing was opened: closing is quiet
    assert opening.owned == []
