"""The grader's handle on one worker: a forked process holding one imported submission.

Requests go out over the worker's own socket; every reply is bounded (``channel``) and validated
(``schema``), and a timeout, a crash or garbage kills the worker.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING, Any

from harness.sandbox.channel import ChannelError, recv_message, send_message
from harness.sandbox.schema import SchemaError, validate_hello, validate_reply

if TYPE_CHECKING:
    from harness.sandbox.launch import Sandbox

__all__ = ["Worker", "WorkerDied", "WorkerTimeout"]


class WorkerDied(Exception):
    """The worker exited, crashed or sent garbage before answering."""


class WorkerTimeout(Exception):
    """The worker did not answer within its time limit and was killed."""


class Worker:
    """One forked process holding one imported submission."""

    def __init__(self, sandbox: Sandbox, number: int, sock: socket.socket) -> None:
        self.sandbox = sandbox
        self.number = number
        self.key = (sandbox.ident, number, id(self))
        self.sock = sock
        self.hello: dict[str, Any] = {}
        self.alive = True

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        if not self.alive:
            raise WorkerDied("the worker is no longer running")
        deadline = time.monotonic() + timeout
        try:
            self.sock.settimeout(timeout)
            send_message(self.sock, payload)
        except (socket.timeout, TimeoutError, OSError) as exc:
            self.kill()
            raise WorkerDied(f"the channel broke while sending a request: {exc}") from None
        return self.receive(deadline - time.monotonic(), "answering a request", kind=str(payload.get("kind")),
                            request=payload)

    def receive(self, timeout: float, what: str, *, kind: str = "", hello: bool = False,
                request: dict[str, Any] | None = None) -> dict[str, Any]:
        """The worker's next message, validated. A timeout, a crash or garbage on the channel kills the worker."""
        try:
            reply = recv_message(self.sock, deadline=time.monotonic() + max(0.01, timeout))
        except (socket.timeout, TimeoutError):
            self.kill()
            raise WorkerTimeout(f"{what} took longer than {timeout:g} s") from None
        except (OSError, ChannelError) as exc:
            self.kill()
            raise WorkerDied(f"the channel broke while {what}: {exc}") from None
        if reply is None:
            self.kill()
            raise WorkerDied(f"the submission's process ended while {what} (it exited, or was killed by a crash)")
        try:
            return validate_hello(reply) if hello else validate_reply(kind, reply, request)
        except SchemaError as exc:
            self.kill()
            raise WorkerDied(f"the worker sent a malformed message while {what}: {str(exc)[:300]}") from None

    def cpu_seconds(self) -> float:
        """CPU time the worker has used so far, read from the kernel by the zygote (never reported by the worker)."""
        if not self.alive:
            return float("nan")
        return self.sandbox.worker_cpu_seconds(self.number)

    def kill(self) -> None:
        if self.alive:
            self.alive = False
            self.sandbox.kill_worker(self.number)
        self.close_channel()

    def close_channel(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def output(self) -> dict[str, str]:
        """The submission's captured stdout/stderr, capped and marked when cut."""
        wait = 0.0 if self.alive else 0.5
        drain = self.sandbox.launcher.drain
        streams = {name: drain.text(self.key, name, wait=wait) for name in ("stdout", "stderr")}
        if not self.alive:
            drain.forget(self.key)
        return streams
