"""The few Linux system calls the sandbox needs that Python's standard library lacks.

Namespaces, mounts, capabilities and process flags, through ``ctypes``. Every
function raises ``OSError`` with the kernel's errno on failure, ``ENOSYS`` where the
system has no such call (a Mac, where a candidate still practises with basic isolation);
callers decide whether a failure is fatal or only means "less isolation on this machine".
Nothing here needs Linux to be imported.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import signal
import time
from typing import Final

_libc = ctypes.CDLL(None, use_errno=True)
NO_PIDFD: Final = -2
"""What ``pidfd_open`` gives where the system has no pidfds: the process is then signalled by its pid."""

CLONE_NEWNS: Final = 0x00020000
CLONE_NEWUTS: Final = 0x04000000
CLONE_NEWIPC: Final = 0x08000000
CLONE_NEWUSER: Final = 0x10000000
CLONE_NEWPID: Final = 0x20000000
CLONE_NEWNET: Final = 0x40000000

MS_RDONLY: Final = 1
MS_NOSUID: Final = 2
MS_NODEV: Final = 4
MS_NOEXEC: Final = 8
MS_REMOUNT: Final = 32
MS_BIND: Final = 4096
MS_REC: Final = 16384
MS_PRIVATE: Final = 1 << 18

PR_SET_PDEATHSIG: Final = 1
PR_SET_DUMPABLE: Final = 4
PR_CAPBSET_DROP: Final = 24
PR_SET_NO_NEW_PRIVS: Final = 38
PR_SET_CHILD_SUBREAPER: Final = 36

_CAP_LAST: Final = 63
_LINUX_CAPABILITY_VERSION_3: Final = 0x20080522


def _call(name: str, *args: object) -> int:
    """The C library's ``name`` called with ``args``; ENOSYS where the library has no such function."""
    function = getattr(_libc, name, None)
    if function is None:
        raise OSError(errno.ENOSYS, f"{name}: not available on this system")
    return function(*args)


def _check(result: int, what: str) -> int:
    if result == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def unshare(flags: int) -> None:
    _check(_call("unshare", ctypes.c_int(flags)), "unshare")


def setns(fd: int, flags: int) -> None:
    _check(_call("setns", ctypes.c_int(fd), ctypes.c_int(flags)), "setns")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_call("mount", source.encode(), target.encode(), fstype.encode() if fstype else None,
                 ctypes.c_ulong(flags), data.encode() if data else None), f"mount {target}")


def prctl(option: int, arg: int = 0) -> None:
    _check(_call("prctl", option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl {option}")


def harden(option: int, arg: int = 0) -> bool:
    """``prctl`` for a flag that only hardens (non-dumpable, child subreaper): False where the system has none."""
    try:
        prctl(option, arg)
    except OSError:
        return False
    return True


def map_ids(uid: int, gid: int) -> None:
    """After ``unshare(CLONE_NEWUSER)``: map ``uid`` and ``gid`` (read before the unshare) to themselves."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")


def drop_capabilities() -> None:
    """Empty the bounding set and every capability set: nothing can be regained, not even by exec."""
    for cap in range(_CAP_LAST + 1):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError:
            break  # past the kernel's last capability, or none to drop
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_call("capset", header, data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)


# Seccomp. First the system calls that hold memory no per-process limit counts: System V
# shared memory outlives every mapping RLIMIT_AS sees, and writing a memfd maps nothing.
# Then process creation: a worker that starts processes spreads its memory over limits
# counted per process, does work its own CPU clock does not count, and runs code where the
# worker's runtime checks do not look. Threads (clone with CLONE_THREAD) stay allowed;
# clone3 answers ENOSYS, so the C library falls back to clone, whose flags a filter can read
# (clone3 passes them in memory a filter cannot see). None of it is any use to an autograd
# engine. Numbers per architecture, from the kernel's tables.
_SECCOMP_ARCH: Final = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_MEMORY_CALLS: Final = {
    "x86_64": {"shmget": 29, "semget": 64, "msgget": 68, "memfd_create": 319},
    "aarch64": {"shmget": 194, "semget": 190, "msgget": 186, "memfd_create": 279},
}
_PROCESS_CALLS: Final = {
    "x86_64": {"fork": 57, "vfork": 58, "execve": 59, "execveat": 322},
    "aarch64": {"execve": 221, "execveat": 281},  # no fork or vfork there: the C library uses clone
}
_CLONE: Final = {"x86_64": 56, "aarch64": 220}
_CLONE3: Final = 435  # the same number on every architecture
CLONE_THREAD: Final = 0x00010000
_X32_SYSCALL_BIT: Final = 0x40000000
PR_SET_SECCOMP: Final = 22
_SECCOMP_MODE_FILTER: Final = 2
_SECCOMP_RET_ALLOW: Final = 0x7FFF0000
_SECCOMP_RET_ERRNO: Final = 0x00050000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_JSET_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_SECCOMP_NR, _SECCOMP_ARCH_OFFSET, _SECCOMP_ARG0 = 0, 4, 16
"""Offsets in struct seccomp_data; the low half of the first argument on a little-endian machine."""


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program(machine: str) -> list[tuple[int, int, int, int]] | None:
    """The worker's filter as BPF instructions (code, jt, jf, k), or None where ``machine`` has no table here.

    Memory calls, fork, vfork, exec and clone without CLONE_THREAD fail with EPERM; clone3
    with ENOSYS. Any other architecture of the same machine (i386 and x32 calls on x86_64)
    is refused as a whole.
    """
    if machine not in _SECCOMP_ARCH:
        return None
    deny = _SECCOMP_RET_ERRNO | errno.EPERM
    program = [(_BPF_LD_W_ABS, 0, 0, _SECCOMP_ARCH_OFFSET), (_BPF_JEQ_K, 1, 0, _SECCOMP_ARCH[machine]),
               (_BPF_RET_K, 0, 0, deny), (_BPF_LD_W_ABS, 0, 0, _SECCOMP_NR)]
    if machine == "x86_64":
        program += [(_BPF_JGE_K, 0, 1, _X32_SYSCALL_BIT), (_BPF_RET_K, 0, 0, deny)]
    denied = [*_MEMORY_CALLS[machine].values(), *_PROCESS_CALLS[machine].values()]
    for number in denied:
        program += [(_BPF_JEQ_K, 0, 1, number), (_BPF_RET_K, 0, 0, deny)]
    program += [(_BPF_JEQ_K, 0, 1, _CLONE3), (_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | errno.ENOSYS),
                # clone: a thread shares the worker's memory, limits and clock; anything else is a process.
                (_BPF_JEQ_K, 0, 3, _CLONE[machine]), (_BPF_LD_W_ABS, 0, 0, _SECCOMP_ARG0),
                (_BPF_JSET_K, 1, 0, CLONE_THREAD), (_BPF_RET_K, 0, 0, deny)]
    program.append((_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW))
    return program


def confine_worker(machine: str) -> bool:
    """Install ``seccomp_program(machine)`` for this process and its threads, for good.

    Needs no_new_privs. Returns False where ``machine`` has no table here.
    """
    program = seccomp_program(machine)
    if program is None:
        return False
    filters = (_SockFilter * len(program))(*[_SockFilter(*instruction) for instruction in program])
    fprog = _SockFprog(len(program), filters)
    _check(_call("prctl", PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
    return True


def drop_to_nobody() -> None:
    """As root: become uid/gid 65534 with no supplementary groups (and so no capabilities)."""
    if os.getuid() == 0 or os.geteuid() == 0:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)


def process_cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) of process ``pid`` in this pid namespace, from the kernel."""
    # The CPU-time clock of another process: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED).
    clock = ((~pid) << 3) | 2
    return time.clock_gettime(clock)


def pidfd_open(pid: int) -> int:
    """A descriptor of process ``pid`` (a recycled pid is never signalled through it), -1 when the process is
    gone, or ``NO_PIDFD`` where the system has no pidfds (not Linux, or Linux before 5.3)."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return NO_PIDFD
    try:
        return opener(pid)
    except OSError as exc:
        return NO_PIDFD if exc.errno == errno.ENOSYS else -1


def signal_process(pid: int, pidfd: int, sig: int) -> None:
    """Send ``sig`` to the process ``pidfd_open`` gave ``pidfd`` for; ProcessLookupError when it is gone."""
    if pidfd >= 0:
        signal.pidfd_send_signal(pidfd, sig)
    elif pidfd == NO_PIDFD:
        os.kill(pid, sig)
    else:
        raise ProcessLookupError(pid)


def close_pidfd(pidfd: int) -> None:
    if pidfd >= 0:
        os.close(pidfd)


def set_limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))
