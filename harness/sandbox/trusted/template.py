"""The template: a trusted process that imports torch once and starts one zygote per submission.

Process tree (with bubblewrap; without it the same tree runs with less around it)::

    grader
     └─ bwrap         a read-only view of the Python installation and the worker
         │            modules, no network, new pid, ipc and uts namespaces
         └─ template  imports torch once; never runs candidate code
             └─ zygote (one per submission: its own user, mount, pid, ipc, uts and
                 │      network namespaces, a private size-limited tmpfs, process and
                 │      file limits; pid 1 of its pid namespace, so when it dies
                 │      everything the submission started dies with it)
                 └─ worker (one per check: pid 1 of its own pid namespace, no
                            capabilities; imports the submission, answers requests)

Importing torch dominates start-up, so it happens here, once, before any torch
op has run; every zygote is a fork of this process and starts in milliseconds.
No zygote is ever reused for a second submission.

Run as ``python -m harness.sandbox.trusted.template FD [many]`` with FD one end of a socket
pair whose other end the grader holds; ``many`` when it will start a batch's submissions.
"""

from __future__ import annotations

import os
import re
import resource
import select
import signal
import socket
import sys
import tempfile
import time
import traceback
from typing import Any

from harness.collector import collector_paused
from harness.sandbox import _linux, as_user, huge_pages, view
from harness.sandbox.trusted import zygote
from harness.sandbox.channel import TRUSTED_LIMITS, recv_message, send_message

_NAMESPACES = (_linux.CLONE_NEWUSER | _linux.CLONE_NEWNS | _linux.CLONE_NEWPID | _linux.CLONE_NEWIPC
               | _linux.CLONE_NEWUTS | _linux.CLONE_NEWNET)
_MIB = 1024 * 1024


def main(fd: int, many: bool = False) -> None:
    channel = socket.socket(fileno=fd)
    # The import's objects are never garbage: frozen, no later collection scans them again.
    with collector_paused(freeze=True):
        import torch

        # Submissions work on tiny tensors; one thread each keeps workers from fighting over cores.
        torch.set_num_threads(1)
        from harness.sandbox.worker import evaluator  # noqa: F401  -- imported once, inherited by every worker
        from harness.sandbox.worker import patch_snapshot

        patch_snapshot.prepare()
    if many:  # about half a second of a core, meanwhile; then 8 ms less for every zygote and worker
        huge_pages.collapse_meanwhile()
    _linux.harden(_linux.PR_SET_DUMPABLE, 0)
    _linux.harden(_linux.PR_SET_CHILD_SUBREAPER, 1)  # orphaned zygotes stay our children (Linux)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # and are reaped by the kernel
    send_message(channel, {"kind": "ready", "uid": os.getuid()})
    zygotes: dict[int, tuple[int, int, bool]] = {}  # id -> (pidfd, pid, namespaces)
    count = 0
    while True:
        fds: list[int] = []
        order = recv_message(channel, fds=fds, **TRUSTED_LIMITS)
        if order is None:
            os._exit(0)
        op = order.get("op")
        if op == "submission" and len(fds) == 1:
            count += 1
            try:
                zygotes[count] = _start_submission(channel, fds[0], order)
                reply: dict[str, Any] = {"id": count, "namespaces": zygotes[count][2]}
            except OSError as exc:
                reply = {"error": f"could not start a zygote: {exc}"}
        elif op == "kill":
            entry = zygotes.pop(order.get("id"), None)
            if entry is not None:
                _kill_zygote(entry[1], entry[0])
                if not entry[2]:
                    _kill_strays({pid for _, pid, _ in zygotes.values()})
            reply = {"ok": True}
        else:
            reply = {"error": f"unknown order {op!r}"}
        for extra in fds:
            _close(extra)
        send_message(channel, reply)


def _start_submission(channel: socket.socket, zygote_fd: int, order: dict[str, Any]) -> tuple[int, int, bool]:
    """Fork the submission's zygote: its pidfd (a recycled pid is never killed), pid, and whether it has namespaces."""
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(report_r)
            channel.close()
            _become_submission(zygote_fd, report_w, order)
        except BaseException:
            traceback.print_exc()  # to the template's stderr, which the grader keeps
        finally:
            os._exit(1)
    os.close(report_w)
    try:
        ready, _, _ = select.select([report_r], [], [], 30.0)
        text = os.read(report_r, 64).decode() if ready else ""
    finally:
        os.close(report_r)
    try:
        zygote_pid, namespaces = text.split()
        return _linux.pidfd_open(int(zygote_pid)), int(zygote_pid), namespaces == "1"
    except ValueError:
        raise OSError("the zygote did not report its pid") from None


def _become_submission(zygote_fd: int, report_fd: int, order: dict[str, Any]) -> None:
    """In the fork: shed the template's privileges, enter new namespaces, fork the zygote, report, exit.

    Nothing may be imported from here on: as uid 65534 the installation may no longer be
    readable (a Python under /root), so every module is imported by the template first.
    """
    import torch

    from harness.sandbox.trusted import zygote

    os.setsid()
    _close_all_but({zygote_fd, report_fd})
    limits = order["limits"]
    baseline = _address_space_bytes()
    # torch reads /proc/cpuinfo on its first op; workers never see /proc, so run one now.
    torch.ones(1).add(1)
    if os.geteuid() == 0:
        _reachable_for_nobody()
    _linux.drop_to_nobody()
    _linux.harden(_linux.PR_SET_DUMPABLE, 1)  # a non-dumpable process may not write its own id maps
    namespaces = _enter_namespaces(limits)
    # With namespaces the submission's folder is its private tmpfs; without, a fresh folder
    # that the grader removes afterwards.
    limits = {**limits, "workroot": "/tmp" if namespaces else tempfile.mkdtemp(prefix="grade-submission-")}
    # Without a user namespace the kernel counts every task of this uid against the limit: the grader's own
    # (an unprivileged grader runs as this uid) and other submissions' (nobody's, under a root grader). The
    # submission gets its processes on top of what this uid runs now; where that cannot be counted (no
    # /proc), the uid's own limit stays (a lower one could keep the submission from starting at all).
    running = 0 if namespaces else _tasks_of(os.getuid())
    if running is not None:
        _linux.set_limit(resource.RLIMIT_NPROC, int(limits["processes"]) + running)
    _linux.set_limit(resource.RLIMIT_NOFILE, 256)
    _linux.set_limit(resource.RLIMIT_CORE, 0)
    pid = os.fork()
    if pid == 0:
        os.close(report_fd)
        zygote.serve(zygote_fd, limits, baseline, namespaces)
    os.write(report_fd, f"{pid} {int(namespaces)}".encode())
    os._exit(0)


def _tasks_of(uid: int) -> int | None:
    """How many tasks (threads included, as RLIMIT_NPROC counts them) ``uid`` runs now; None without /proc."""
    count = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry}/task"))
            except OSError:
                pass  # gone meanwhile
    return count


def _reachable_for_nobody() -> None:
    """Without bubblewrap, as root: the installation within reach of uid 65534 (a pyenv under a 0700 /root).

    In a mount namespace of this submission's own, each folder that blocks the way is
    covered and what lies below it bound again (``as_user``). Under bubblewrap the
    template may not mount, and needs not: bubblewrap made those folders itself.
    """
    try:
        _linux.unshare(_linux.CLONE_NEWNS)
    except OSError:
        return
    try:
        _linux.mount("none", "/", None, _linux.MS_REC | _linux.MS_PRIVATE)
        as_user.make_reachable(_installation_paths(), 65534, 65534)
    except OSError:
        pass  # what stays out of reach fails at import, in the report


def _installation_paths() -> list[str]:
    """The folders this Python imports from, outermost first, none inside another."""
    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable),
                  os.path.dirname(os.path.realpath(sys.executable)), *sys.path]
    chosen: list[str] = []
    for path in sorted({os.path.realpath(p) for p in candidates if p and os.path.isdir(p)}, key=len):
        if not any(view.under(path, c) for c in chosen):
            chosen.append(path)
    return chosen


def _enter_namespaces(limits: dict[str, Any]) -> bool:
    """New user, mount, pid, ipc, uts and network namespaces, a read-only view, a private /tmp and no /proc.

    Returns False where the machine allows no user namespaces: the submission then
    runs with the template's view (and the grader says so in the report).
    """
    uid, gid = os.getuid(), os.getgid()  # afterwards they read as unmapped until the maps are written
    try:
        _linux.unshare(_NAMESPACES)
    except OSError:
        return False
    _linux.map_ids(uid, gid)
    _close_namespace_loopholes()
    _linux.mount("none", "/", None, _linux.MS_REC | _linux.MS_PRIVATE)
    kept = _open_under_tmp()
    _linux.mount("tmpfs", "/tmp", "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV,
                 f"size={int(limits['disk_mb'])}m,mode=0700")
    _bind_again(kept)
    # Read-only everywhere but the private /tmp, bubblewrap's own folders included: started
    # by an unprivileged user, its root, /etc, /dev and /dev/shm are tmpfs folders the
    # submission owns, with no size limit and shared with every later submission.
    _remount_everything_read_only(but="/tmp")
    hidden = _linux.MS_RDONLY | _linux.MS_NOSUID | _linux.MS_NODEV | _linux.MS_NOEXEC
    for pseudo in ("/proc", "/sys"):
        if os.path.isdir(pseudo):
            try:
                _linux.mount("tmpfs", pseudo, "tmpfs", hidden, "size=4k")
            except OSError:
                pass
    return True


def _close_namespace_loopholes() -> None:
    """No user namespaces below this one: root in a nested one may mount a tmpfs of any size.

    The limit belongs to the user namespace just created, so it binds the submission only.
    """
    try:
        with open("/proc/sys/user/max_user_namespaces", "w") as f:
            f.write("0")
    except OSError:
        pass  # a kernel without per-namespace limits: the workers still hold no capabilities


_MOUNT_FLAGS = {"nosuid": _linux.MS_NOSUID, "nodev": _linux.MS_NODEV, "noexec": _linux.MS_NOEXEC,
                "noatime": 1024, "nodiratime": 2048, "relatime": 1 << 21, "strictatime": 1 << 24}


def _open_under_tmp() -> list[tuple[str, int]]:
    """The installation's folders that live under /tmp (a venv there), opened before a private /tmp hides them."""
    chosen = [p for p in _installation_paths() if view.under(p, "/tmp") and p != "/tmp"]
    kept = []
    for path in chosen:
        try:
            kept.append((path, os.open(path, os.O_PATH | os.O_CLOEXEC)))
        except OSError:
            pass  # beyond this user's reach (basic isolation, a 0700 folder): it was never importable
    return kept


def _bind_again(kept: list[tuple[str, int]]) -> None:
    """Bind each folder opened by ``_open_under_tmp`` at its own path in the new /tmp."""
    for path, fd in kept:
        try:
            os.makedirs(path, 0o755, exist_ok=True)
            _linux.mount(f"/proc/self/fd/{fd}", path, None, _linux.MS_BIND | _linux.MS_REC)
        except OSError:
            pass
        finally:
            os.close(fd)


def _remount_everything_read_only(but: str = "") -> None:
    """Make every mount in this mount namespace read-only (the host's, without bubblewrap; its own, with).

    A remount must keep the flags the kernel locked when the namespace was created
    (nosuid, nodev, ...), so each mount's own options are carried over.
    """
    try:
        with open("/proc/self/mountinfo") as f:
            entries = [line.split() for line in f]
    except OSError:
        return
    for fields in entries:
        if len(fields) < 6:
            continue
        target = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
        if target == but:
            continue
        flags = _linux.MS_REMOUNT | _linux.MS_BIND | _linux.MS_RDONLY
        for option in fields[5].split(","):
            flags |= _MOUNT_FLAGS.get(option, 0)
        try:
            _linux.mount("none", target, None, flags)
        except OSError:
            pass


def _address_space_bytes() -> int:
    try:
        with open("/proc/self/status") as status:
            return next((int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:")), 0)
    except OSError:  # no /proc (a Mac, where no address-space limit applies anyway)
        return 0


def _close_all_but(keep: set[int]) -> None:
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 16)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _kill_strays(live_zygotes: set[int]) -> None:
    """Without namespaces: kill what a killed zygote's submission left behind.

    Its workers and the daemons they reparented to it come here, to the subreaper, when
    it dies: every child but a live zygote is a stray. A process that keeps re-forking
    may stay a step ahead of these rounds; only a pid namespace ends it for sure.
    """
    me = os.getpid()
    for _ in range(50):
        strays = [pid for pid, parent in zygote.parents().items() if parent == me and pid not in live_zygotes]
        if not strays:
            return
        for pid in strays + [d for stray in strays for d in zygote.descendants(stray)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.001)


def _kill_zygote(pid: int, pidfd: int) -> None:
    try:
        _linux.signal_process(pid, pidfd, signal.SIGKILL)
    except (ProcessLookupError, OSError):
        pass
    _linux.close_pidfd(pidfd)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:] == ["many"])
