"""The few Linux system calls the sandbox needs that Python's standard library lacks.

Namespaces, mounts, capabilities and process flags, through ``ctypes``. Every
function raises ``OSError`` with the kernel's errno on failure; callers decide
whether a failure is fatal or only means "less isolation on this machine".
"""

from __future__ import annotations

import ctypes
import os
import resource
import time
from typing import Final

_libc = ctypes.CDLL(None, use_errno=True)

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


def _check(result: int, what: str) -> int:
    if result == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                       ctypes.c_ulong(flags), data.encode() if data else None), f"mount {target}")


def prctl(option: int, arg: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl {option}")


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
    _check(_libc.capset(header, data), "capset")
    prctl(PR_SET_NO_NEW_PRIVS, 1)


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


def set_limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))
