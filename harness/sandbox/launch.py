"""The parent side of the sandbox: start workers, talk to them, kill them.

Standard library only, so ``Sandbox.launch`` can start the zygote (which
imports torch) before the grader imports torch itself: the two imports then
overlap on the machine's cores.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.sandbox.channel import ChannelError, recv_message, send_message

__all__ = ["Sandbox", "Worker", "WorkerDied", "WorkerTimeout", "Limits", "OUTPUT_CAP", "bubblewrap_missing"]

OUTPUT_CAP = 4000
"""Characters of a submission's stdout/stderr kept per stream."""


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 2048
    import_seconds: float = 20.0
    start_seconds: float = 60.0


def bubblewrap_missing() -> str | None:
    """Why submissions cannot run in a bubblewrap sandbox here, or None when they can."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap, dnf install bubblewrap or pacman -S bubblewrap)"
    return None


class WorkerDied(Exception):
    """The worker exited, crashed or sent garbage before answering."""


class WorkerTimeout(Exception):
    """The worker did not answer within its time limit and was killed."""


class Worker:
    """One forked process holding one imported submission."""

    def __init__(self, pid: int, sock: socket.socket, workdir: Path, hello: dict[str, Any]) -> None:
        self.pid = pid
        self.sock = sock
        self.workdir = workdir
        self.hello = hello
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
        return self.receive(deadline - time.monotonic(), "answering a request")

    def receive(self, timeout: float, what: str) -> dict[str, Any]:
        """The worker's next message. A timeout, a crash or garbage on the channel kills the worker."""
        try:
            self.sock.settimeout(max(0.01, timeout))
            reply = recv_message(self.sock)
        except (socket.timeout, TimeoutError):
            self.kill()
            raise WorkerTimeout(f"{what} took longer than {timeout:g} s") from None
        except (OSError, ChannelError) as exc:
            self.kill()
            raise WorkerDied(f"the channel broke while {what}: {exc}") from None
        if not isinstance(reply, dict):
            self.kill()
            raise WorkerDied(f"the submission's process ended while {what} (it exited, or was killed by a crash)")
        return reply

    def kill(self) -> None:
        if self.alive:
            _kill_tree(self.pid)
            self.alive = False
        try:
            self.sock.close()
        except OSError:
            pass

    def cpu_seconds(self) -> float:
        """CPU time the worker process has used so far, read from the kernel (never reported by the worker)."""
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return float("nan")
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def output(self) -> dict[str, str]:
        """The submission's captured stdout/stderr, capped and marked when cut."""
        streams = {}
        for name in ("stdout", "stderr"):
            path = self.workdir / f"{name}.txt"
            try:
                with open(path, "rb") as f:
                    data = f.read(OUTPUT_CAP + 1)
            except OSError:
                data = b""
            text = data[:OUTPUT_CAP].decode(errors="replace")
            if len(data) > OUTPUT_CAP:
                text += "\n[... output truncated ...]"
            streams[name] = text
        return streams


class Sandbox:
    """A zygote process plus the workers forked from it, for one submission at a time."""

    isolation = "basic"
    """How submissions are confined: "sandbox" (bubblewrap) or "basic" (a child process with rlimits)."""

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits
        self.dir = Path(tempfile.mkdtemp(prefix="grade-"))
        self._control_path = str(self.dir / "control.sock")
        self._data_path = str(self.dir / "data.sock")
        self._control_listener = _listen(self._control_path)
        self._data_listener = _listen(self._data_path)
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        self._zygote = subprocess.Popen(
            [sys.executable, "-m", "harness.sandbox.zygote", self._control_path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True, env=env, cwd=str(self.dir),
        )
        self._control: socket.socket | None = None
        self._workers: list[Worker] = []
        self._count = 0
        self._lock = threading.Lock()  # one fork-and-connect at a time: the channels are shared

    @classmethod
    def launch(cls, limits: Limits = Limits()) -> Sandbox:
        """Start the zygote now; it finishes importing torch while the caller does the same."""
        return cls(limits)

    def _connect(self) -> socket.socket:
        if self._control is None:
            self._control_listener.settimeout(self.limits.start_seconds)
            try:
                self._control, _ = self._control_listener.accept()
            except (socket.timeout, TimeoutError):
                raise RuntimeError(self._zygote_failure("the sandbox did not start in time")) from None
            self._control.settimeout(self.limits.start_seconds)
            ready = recv_message(self._control)
            if not ready:
                raise RuntimeError(self._zygote_failure("the sandbox failed to start"))
        return self._control

    def _zygote_failure(self, what: str) -> str:
        if self._zygote.poll() is not None and self._zygote.stderr is not None:
            detail = self._zygote.stderr.read().decode(errors="replace").strip().splitlines()[-1:]
            return f"{what}: {' '.join(detail)}"
        return what

    def spawn(self, path: Path, class_name: str = "Tensor") -> Worker:
        """Fork a worker and wait until it has imported the submission.

        Raises WorkerDied or WorkerTimeout when the import itself fails that way;
        an exception raised by the submission's code comes back in the hello.
        """
        with self._lock:
            control = self._connect()
            self._count += 1
            workdir = self.dir / f"w{self._count}"
            workdir.mkdir()
            token = secrets.token_hex(16)
            send_message(control, {
                "path": str(Path(path).resolve()), "class_name": class_name, "workdir": str(workdir),
                "data_path": self._data_path, "token": token, "memory_mb": self.limits.memory_mb,
            })
            pid = int(recv_message(control)["pid"])
            self._data_listener.settimeout(self.limits.start_seconds)
            try:
                sock, _ = self._data_listener.accept()
                sock.settimeout(5)
                if _recv_exactly(sock, len(token)) != token.encode():
                    raise OSError("bad token")
            except (OSError, socket.timeout):
                _kill_tree(pid)
                raise WorkerDied("the worker did not connect") from None
            worker = Worker(pid, sock, workdir, {})
            self._workers.append(worker)
        worker.hello = worker.receive(self.limits.import_seconds, "importing the submission")
        return worker

    def close(self) -> None:
        for worker in self._workers:
            worker.kill()
        if self._zygote.poll() is None:
            _kill_tree(self._zygote.pid)
        try:
            self._zygote.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self._zygote.stderr is not None:
            self._zygote.stderr.close()
        for s in (self._control, self._control_listener, self._data_listener):
            if s is not None:
                s.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _listen(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    os.chmod(path, 0o600)
    sock.listen(8)
    return sock


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _descendants(root: int) -> list[int]:
    """Every live process below ``root``, found through /proc parent links."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        for child in children.get(pid, []):
            found.append(child)
            frontier.append(child)
    return found


def _kill_tree(pid: int) -> None:
    """Kill a process, its process group and every descendant, whatever session they moved to."""
    targets = _descendants(pid)
    for sig_target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            sig_target()
        except (ProcessLookupError, PermissionError):
            pass
    for child in targets:
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
