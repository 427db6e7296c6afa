"""The grader's side of the sandbox: start the template, open one sandbox per submission, talk to workers.

A ``Launcher`` starts the template process (inside bubblewrap when it is
installed, see ``template.py`` for the process tree) as soon as it is created,
so torch is imported there while the grader imports its own copy. Each
submission then gets a ``Sandbox``: a fresh zygote with its own namespaces,
never reused. Each check gets a ``Worker`` forked from it.

Everything a sandboxed process sends is hostile input: messages are bounded
and validated (``channel``, ``schema``) and a worker's stdout/stderr arrive
through pipes that one thread drains, capped. Standard library only, so the
template can start before the grader imports torch.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from harness.sandbox.cgroups import TreeLimits
from harness.sandbox.channel import ChannelError, recv_message, send_message
from harness.sandbox.cleanup import remove_tree
from harness.sandbox.diagnose import explain
from harness.sandbox.drain import OUTPUT_CAP, Drain
from harness.sandbox.view import bubblewrap_view
from harness.sandbox.worker_handle import Worker, WorkerDied, WorkerTimeout

__all__ = ["Launcher", "Sandbox", "Worker", "WorkerDied", "WorkerTimeout", "Limits", "SandboxUnavailable",
           "OUTPUT_CAP", "bubblewrap_missing"]

FORCE_BASIC = "GRADER_ISOLATION"
"""Set to ``basic`` to run without bubblewrap even where it is installed (tests of the fallback)."""

_ORDER_SECONDS = 10.0
_MIB = 1024 * 1024
_TRUSTED_PROCESSES = 4
"""The zygote and the short-lived middle processes that start workers, counted beside the submission's own."""
"""How long the trusted template or zygote may take to answer an order before it counts as dead."""


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 2048
    """Address space per worker, above what the imported torch already takes."""
    processes: int = 32
    """Processes and threads of one submission, all its workers together."""
    disk_mb: int = 64
    """The submission's private tmpfs: all the files it may write, together."""
    file_mb: int = 32
    tree_memory_mb: int = 4096
    """Memory of the whole submission together (where a cgroup can be made): two workers run at once."""
    import_seconds: float = 20.0
    start_seconds: float = 60.0


def bubblewrap_missing() -> str | None:
    """Why submissions cannot run in a bubblewrap sandbox here, or None when they can."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap, dnf install bubblewrap or pacman -S bubblewrap)"
    return None


class SandboxUnavailable(RuntimeError):
    """The sandbox could not be started (bubblewrap refused, the template died): not the submission's fault."""



# ---- the template --------------------------------------------------------------------------------


class Launcher:
    """The template process, started at once, from which every submission's sandbox is forked.

    ``isolation`` is "auto" (bubblewrap when installed), "sandbox" (bubblewrap or a
    ``SandboxUnavailable`` error) or "basic" (a plain child process: rlimits, its own
    session, uid 65534 when the grader is root, and namespaces where the kernel allows).
    """

    def __init__(self, isolation: str = "auto", *, user: str | None = None,
                 start_seconds: float = Limits.start_seconds, many: bool = False) -> None:
        if isolation not in ("auto", "sandbox", "basic"):
            raise ValueError(f"unknown isolation {isolation!r}")
        missing = bubblewrap_missing()
        if isolation == "sandbox" and missing:
            raise SandboxUnavailable(missing)
        forced_basic = os.environ.get(FORCE_BASIC) == "basic"
        self.mode = "basic" if isolation == "basic" or (isolation == "auto" and (missing or forced_basic)) \
            else "sandbox"
        self.fallback = isolation == "auto"
        """May fall back to "basic" when bubblewrap is installed but cannot start here."""
        self.why_basic = missing if self.mode == "basic" and missing and isolation == "auto" else ""
        self.start_seconds = start_seconds
        self.user = user
        self.many = many
        """It will start many submissions (a batch): worth most of a second at start-up to make every fork cheaper
        (``huge_pages``); a single grade's dozen forks would not win it back."""
        self.drain = Drain()
        self._lock = threading.Lock()
        self._closed = False
        self._start()

    def _start(self) -> None:
        self._ready = False
        user = self.user
        ours, theirs = socket.socketpair()
        self._channel = ours
        command, env = self._command(theirs.fileno())
        if user is not None and os.geteuid() == 0 and self.mode == "sandbox":
            user = None  # as_user becomes the user once the paths bubblewrap binds are within its reach
        stderr_r, stderr_w = os.pipe()
        try:
            self._process = subprocess.Popen(
                command, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=stderr_w, start_new_session=True, env=env, cwd="/", user=user,
                group=None if user is None else _primary_group(user), extra_groups=None if user is None else [],
            )
        except OSError as exc:
            ours.close()
            os.close(stderr_r)
            raise SandboxUnavailable(f"could not start the sandbox: {exc}") from None
        finally:
            theirs.close()
            os.close(stderr_w)
        self.drain.add("template", "stderr", stderr_r)

    # ---- how the template is started ----

    def _command(self, fd: int) -> tuple[list[str], dict[str, str]]:
        harness_dir = Path(__file__).resolve().parent.parent
        python = [sys.executable, "-P", "-s", "-m", "harness.sandbox.trusted.template", str(fd),
                  *(["many"] if self.many else [])]
        env = {"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONSAFEPATH": "1", "LANG": "C.UTF-8",
               "OMP_NUM_THREADS": "1"}
        if self.mode == "basic":
            return python, {**env, "PYTHONPATH": str(harness_dir.parent), "HOME": "/tmp"}
        view, sources = bubblewrap_view(harness_dir, as_root=os.geteuid() == 0 and self.user is None)
        command = ["bwrap", *view, "--", *python]
        if self.user is not None and os.geteuid() == 0:
            import pwd

            entry = pwd.getpwnam(self.user)
            # Only this first step runs with the grader's modules on its path; bwrap sets its own.
            return ([sys.executable, "-P", "-s", "-m", "harness.sandbox.as_user", str(entry.pw_uid),
                     str(entry.pw_gid), *sources, "--", *command], {**env, "PYTHONPATH": str(harness_dir.parent)})
        return command, env

    def _await_ready(self) -> None:
        if self._ready:
            return
        deadline = time.monotonic() + self.start_seconds
        try:
            hello = recv_message(self._channel, deadline=deadline)
        except (OSError, ChannelError):
            hello = None
        if isinstance(hello, dict) and hello.get("kind") == "ready":
            self._ready = True
            return
        failure = self._failure("the sandbox did not start")
        if self.mode == "sandbox":
            failure = explain(self._last_words(), self.user)
        if self.mode == "sandbox" and self.fallback:
            # bubblewrap is installed but refused here (a container without user namespaces,
            # say): grade with basic isolation, and say why in the report.
            self._stop()
            self.mode, self.why_basic = "basic", failure
            self._start()
            return self._await_ready()
        raise SandboxUnavailable(failure)

    def _failure(self, what: str) -> str:
        detail = self._last_words()
        return f"{what}: {detail}" if detail else what

    def _last_words(self) -> str:
        return " ".join(self.drain.text("template", "stderr", wait=0.5).strip().splitlines()[-1:])

    def _order(self, order: dict[str, Any], fds: list[int] = ()) -> dict[str, Any]:
        reply = _ask(self._channel, order, fds)
        if not isinstance(reply, dict):
            raise SandboxUnavailable(self._failure("the sandbox's template stopped answering"))
        return reply

    # ---- submissions ----

    def sandbox(self, limits: Limits = Limits()) -> Sandbox:
        """A fresh sandbox for one submission: a new zygote with namespaces of its own."""
        ours, theirs = socket.socketpair()
        # The kernel then tells which process sent each message, by its pid in our namespace:
        # the zygote's, to put it under a cgroup.
        if hasattr(socket, "SO_PASSCRED"):  # Linux; elsewhere no cgroup is made either
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        with self._lock:
            if self._closed:
                raise SandboxUnavailable("the sandbox has been shut down")
            self._await_ready()
            order = {"op": "submission",
                     "limits": {"memory_mb": limits.memory_mb, "processes": limits.processes,
                                "disk_mb": limits.disk_mb, "file_mb": limits.file_mb}}
            try:
                reply = self._order(order, [theirs.fileno()])
            finally:
                theirs.close()
        if "id" not in reply:
            ours.close()
            raise SandboxUnavailable(str(reply.get("error", "the sandbox refused a new submission"))[:300])
        return Sandbox(self, int(reply["id"]), ours, limits)

    def kill_submission(self, ident: int) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self._order({"op": "kill", "id": ident})
            except SandboxUnavailable:
                pass

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stop()
        self.drain.close()

    def _stop(self) -> None:
        self._channel.close()
        try:
            os.killpg(self._process.pid, signal.SIGKILL)  # bubblewrap's pid namespace dies with it
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.drain.forget("template")

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _primary_group(user: str) -> int:
    import pwd

    return pwd.getpwnam(user).pw_gid


# ---- one submission --------------------------------------------------------------------------


class Sandbox:
    """One submission's zygote and the workers forked from it. Closing it kills them all."""

    def __init__(self, launcher: Launcher, ident: int, channel: socket.socket, limits: Limits) -> None:
        self.launcher = launcher
        self.ident = ident
        self.limits = limits
        self._channel = channel
        self._lock = threading.Lock()
        self._sources: dict[str, str] = {}
        self._workers: list[Worker] = []
        self._owns_launcher = False
        self.closed = False
        senders: list[int] = []
        try:
            ready = recv_message(channel, deadline=time.monotonic() + _ORDER_SECONDS, senders=senders)
        except (OSError, ChannelError):
            ready = None
        if not isinstance(ready, dict) or ready.get("kind") != "ready":
            channel.close()
            launcher.kill_submission(ident)
            raise SandboxUnavailable(launcher._failure("the submission's sandbox did not start"))
        self.namespaces = bool(ready.get("namespaces"))
        self._workroot = str(ready.get("workroot", ""))
        self.isolation = "sandbox" if launcher.mode == "sandbox" and self.namespaces else "basic"
        self.isolation_note = launcher.why_basic or ("" if self.namespaces else "this machine allows no user namespaces")
        # Before any worker exists: the whole tree's memory and processes, where a cgroup can be made.
        self.tree: TreeLimits | None = None
        if senders:
            self.tree = TreeLimits.create(limits.tree_memory_mb * _MIB, limits.processes + _TRUSTED_PROCESSES)
            if self.tree is not None and not self.tree.add(senders[0]):
                self.tree.close()
                self.tree = None

    @classmethod
    def launch(cls, limits: Limits = Limits(), isolation: str = "auto") -> Sandbox:
        """A sandbox with a launcher of its own, closed with it (one submission, then done)."""
        launcher = Launcher(isolation, start_seconds=limits.start_seconds)
        try:
            box = launcher.sandbox(limits)
        except BaseException:
            launcher.close()
            raise
        box._owns_launcher = True
        return box

    def _order(self, order: dict[str, Any], fds: list[int] = ()) -> dict[str, Any]:
        """Send the zygote an order and wait for its answer; a zygote that does not answer ends the sandbox."""
        with self._lock:
            if self.closed:
                raise WorkerDied("the submission's sandbox was shut down")
            reply = _ask(self._channel, order, fds)
        if not isinstance(reply, dict):
            self.abort()
            raise WorkerDied("the submission's sandbox stopped answering")
        return reply

    def spawn(self, path: Path, class_name: str = "Tensor", *, probe: bool = True) -> Worker:
        """Fork a worker and wait until it has imported the submission; ``probe``: its hello also tries the
        features that need the submission's ops to run (broadcasting, number operands).

        Raises WorkerDied or WorkerTimeout when the import itself fails that way;
        an exception raised by the submission's code comes back in the hello.
        """
        source = self._source(path)
        stem = Path(path).stem
        module = stem if stem.isidentifier() else "solution"
        theirs, ours = socket.socketpair()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            reply = self._order({"op": "spawn", "module": module, "source": source, "class_name": class_name,
                                 "probe": probe},
                                [theirs.fileno(), out_w, err_w])
        except BaseException:
            for fd in (out_r, err_r):
                os.close(fd)
            ours.close()
            raise
        finally:
            theirs.close()
            os.close(out_w)
            os.close(err_w)
        if "worker" not in reply:
            for fd in (out_r, err_r):
                os.close(fd)
            ours.close()
            raise WorkerDied(str(reply.get("error", "the worker was not started"))[:300])
        worker = Worker(self, int(reply["worker"]), ours)
        self.launcher.drain.add(worker.key, "stdout", out_r)
        self.launcher.drain.add(worker.key, "stderr", err_r)
        self._workers.append(worker)
        worker.hello = worker.receive(self.limits.import_seconds, "importing the submission", hello=True)
        return worker

    def provide_source(self, path: Path, text: str) -> None:
        """The text the workers import for ``path``: what the grader read and judged (a notebook's code
        cells, a file read once under its size cap), never the file read again."""
        self._sources[str(path)] = text

    def _source(self, path: Path) -> str:
        # Read once: every worker of a grade imports the same text, even if the file changes meanwhile.
        key = str(path)
        if key not in self._sources:
            self._sources[key] = Path(path).read_text(encoding="utf-8")
        return self._sources[key]

    def kill_worker(self, number: int) -> None:
        if not self.closed:
            try:
                self._order({"op": "kill", "worker": number})
            except WorkerDied:
                pass

    def worker_cpu_seconds(self, number: int) -> float:
        try:
            reply = self._order({"op": "cpu", "worker": number})
        except WorkerDied:
            return float("nan")
        seconds = reply.get("seconds")
        return float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else float("nan")

    def abort(self) -> None:
        """Kill the whole submission now (the watchdog's way): every worker dies, every request fails."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._channel.close()
        self.launcher.kill_submission(self.ident)

    def close(self) -> None:
        self.abort()
        for worker in self._workers:
            worker.alive = False
            worker.close_channel()
            self.launcher.drain.forget(worker.key)
        if self.launcher.mode == "basic" and not self.namespaces and self._workroot.startswith("/tmp/"):
            remove_tree(self._workroot, seconds=_CLEANUP_SECONDS)
        if self.tree is not None:
            self.tree.close()
        if self._owns_launcher:
            self.launcher.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_CLEANUP_SECONDS = 5.0
"""How long removing a submission's folder (without namespaces) may delay the end of a grade."""


def _ask(channel: socket.socket, order: dict[str, Any], fds: Sequence[int] = ()) -> Any:
    """Send a trusted process an order; its reply, or None when it does not answer in time."""
    try:
        send_message(channel, order, fds)
        return recv_message(channel, deadline=time.monotonic() + _ORDER_SECONDS)
    except (OSError, ChannelError):
        return None
