"""The zygote: one per submission, it forks a fresh worker for every check and kills it on request.

It runs inside the submission's namespaces but never runs candidate code
itself. Each worker is pid 1 of a pid namespace of its own, so killing the
worker kills everything it started, however it forked or daemonised; the
zygote is pid 1 of the submission's pid namespace, so when it exits (the
grader hung up) every worker dies with it. It also tells the grader the CPU
time of a worker, read from the kernel: a number the worker cannot forge.

Orders arrive on the zygote's channel from the grader: ``spawn`` (with the
worker's socket and its stdout/stderr pipes as file descriptors), ``kill``
and ``cpu``.
"""

from __future__ import annotations

import os
import random
import resource
import signal
import socket
import sys
from typing import Any

from harness.sandbox import _linux
from harness.sandbox.channel import TRUSTED_LIMITS, recv_message, send_message

_MIB = 1024 * 1024
_WORKER_SOCKET = 3


def serve(channel_fd: int, limits: dict[str, Any], baseline_bytes: int, namespaces: bool) -> None:
    """Answer the grader's orders until it hangs up; never returns."""
    code = 0
    try:
        channel = socket.socket(fileno=channel_fd)
        _linux.harden(_linux.PR_SET_DUMPABLE, 0)
        if not namespaces:
            _linux.harden(_linux.PR_SET_CHILD_SUBREAPER, 1)  # so daemonised grandchildren can still be found
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        workers: dict[int, tuple[int, int]] = {}  # id -> (pid, pidfd)
        send_message(channel, {"kind": "ready", "namespaces": namespaces, "workroot": str(limits["workroot"])})
        count = 0
        while True:
            fds: list[int] = []
            order = recv_message(channel, fds=fds, **TRUSTED_LIMITS)
            if order is None:
                return  # pid 1 exits: the kernel kills every process of the submission
            op = order.get("op")
            reply: dict[str, Any]
            if op == "spawn" and len(fds) == 3:
                count += 1
                pid = _spawn(count, order, fds, limits, baseline_bytes, namespaces)
                workers[count] = (pid, _pidfd(pid))
                reply = {"worker": count}
            elif op == "kill":
                entry = workers.pop(order.get("worker"), None)
                if entry is not None:
                    _kill(entry, namespaces)
                reply = {"ok": True}
            elif op == "cpu":
                entry = workers.get(order.get("worker"))
                reply = {"seconds": _cpu_seconds(entry)}
            else:
                reply = {"error": f"unknown order {op!r}"}
            for fd in fds:
                os.close(fd)
            send_message(channel, reply)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _spawn(number: int, order: dict[str, Any], fds: list[int], limits: dict[str, Any], baseline_bytes: int,
           namespaces: bool) -> int:
    """Fork a worker; with namespaces it is pid 1 of a new pid namespace (on a kernel older than 5.8, through
    a short-lived middle process)."""
    if not namespaces or _next_child_in_new_pid_namespace():
        pid = os.fork()
        if pid == 0:
            _become_worker(number, order, fds, limits, baseline_bytes, namespaces)
        return pid
    report_r, report_w = os.pipe()
    middle = os.fork()
    if middle == 0:
        try:
            os.close(report_r)
            _linux.unshare(_linux.CLONE_NEWPID)
            pid = os.fork()
            if pid == 0:
                os.close(report_w)
                _become_worker(number, order, fds, limits, baseline_bytes, namespaces)
            os.write(report_w, str(pid).encode())
        finally:
            os._exit(0)
    os.close(report_w)
    try:
        text = os.read(report_r, 32)
    finally:
        os.close(report_r)
    if not text:
        raise OSError("the worker was not started")
    return int(text)


_OWN_PIDFD: list[int] = []
"""The zygote's pidfd, to return to its own pid namespace; empty until first needed, -1 where that fails."""


def _next_child_in_new_pid_namespace() -> bool:
    """Make the next fork pid 1 of a pid namespace of its own; False where the kernel cannot (then a middle
    process unshares instead). One fork of the zygote, not two, per worker: a fork and an exit of a process
    that holds torch cost milliseconds of CPU each."""
    if not _OWN_PIDFD:
        _OWN_PIDFD.append(_pidfd(os.getpid()))
    if _OWN_PIDFD[0] < 0:
        return False
    try:
        # unshare() makes a new pid namespace only from the one this process lives in, so first
        # return there from the namespace the previous worker was made in (Linux 5.8: setns on a pidfd).
        _linux.setns(_OWN_PIDFD[0], _linux.CLONE_NEWPID)
        _linux.unshare(_linux.CLONE_NEWPID)
    except OSError:
        os.close(_OWN_PIDFD[0])
        _OWN_PIDFD[0] = -1
        return False
    return True


def _become_worker(number: int, order: dict[str, Any], fds: list[int], limits: dict[str, Any],
                   baseline_bytes: int, namespaces: bool) -> None:
    """In the fork: confine this process, write the submission into its own folder, and serve the grader."""
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock_fd, out_fd, err_fd = fds
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.dup2(sock_fd, _WORKER_SOCKET)
        os.closerange(_WORKER_SOCKET + 1, 1 << 16)
        # Unbuffered: a worker is killed, never shut down, and buffered output would be lost.
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(line_buffering=True, write_through=True)
        workdir = os.path.join(str(limits["workroot"]), f"w{number}")
        os.mkdir(workdir, 0o700)
        os.chdir(workdir)
        module_path = os.path.join(workdir, f"{order['module']}.py")
        with open(module_path, "w", encoding="utf-8") as f:
            f.write(order["source"])
        _linux.set_limit(resource.RLIMIT_AS, baseline_bytes + int(limits["memory_mb"]) * _MIB)
        _linux.set_limit(resource.RLIMIT_FSIZE, int(limits["file_mb"]) * _MIB)
        if namespaces:
            _linux.drop_capabilities()
        else:
            _linux.harden(_linux.PR_SET_NO_NEW_PRIVS, 1)
        # Before any of the submission's code exists in this process: it may start no process,
        # so the limits above bound all of its memory and its CPU clock counts all of its work.
        try:
            _linux.confine_worker(os.uname().machine)
        except OSError:
            pass  # a kernel without seccomp: the process limit and the pid namespace still hold
        # Every worker is a fork of one template: without this, Python's random numbers would
        # repeat from check to check, and a submission could tell its checks apart by them.
        random.seed()
        from harness.sandbox.worker import evaluator

        evaluator.serve(socket.socket(fileno=_WORKER_SOCKET), module_path, order["class_name"],
                        probe=order.get("probe") is not False)
        code = 0
    except BaseException as exc:  # the grader reports the worker's end as a crash; this says why
        try:
            os.write(2, f"[the grader's worker stopped: {type(exc).__name__}: {str(exc)[:200]}]\n".encode())
        except OSError:
            pass
        code = 1
    finally:
        os._exit(code)


def _pidfd(pid: int) -> int:
    return _linux.pidfd_open(pid)


def _kill(entry: tuple[int, int], namespaces: bool) -> None:
    pid, pidfd = entry
    if pidfd == -1:
        return  # already gone
    if not namespaces:
        _kill_tree(pid)
    try:
        _linux.signal_process(pid, pidfd, signal.SIGKILL)  # pid 1 of its namespace: all of it dies
    except (ProcessLookupError, OSError):
        pass
    _linux.close_pidfd(pidfd)


def _cpu_seconds(entry: tuple[int, int] | None) -> float | None:
    if entry is None:
        return None
    pid, pidfd = entry
    try:
        _linux.signal_process(pid, pidfd, 0)  # still the same process, not a recycled pid
        return _linux.process_cpu_seconds(pid)
    except (ProcessLookupError, OSError):
        return None


def parents() -> dict[int, int]:
    """Every process in /proc and its parent (only without pid namespaces: workers see no /proc)."""
    found = {}
    try:
        entries = os.listdir("/proc")
    except OSError:  # no /proc (a Mac): the worker's process group is all that is killed
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        found[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def descendants(root: int) -> list[int]:
    """Every live process below ``root``, found through /proc parent links (only without pid namespaces)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parents().items():
        children.setdefault(ppid, []).append(pid)
    found, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        for child in children.get(pid, []):
            found.append(child)
            frontier.append(child)
    return found


def _kill_tree(pid: int) -> None:
    """Kill a worker, its process group and every descendant, whatever session they moved to."""
    targets = descendants(pid)
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            pass
    for child in targets:
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
