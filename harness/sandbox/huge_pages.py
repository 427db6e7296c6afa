"""The template's memory held in huge pages, so that forking it costs a fraction of what it did.

Every zygote and every worker is a fork of the template, which holds about 150 MB of anonymous
memory once torch is imported. A fork copies one page-table entry per 4 KiB page and an exit frees
them all: measured here, a fork and exit of the template took 12-14 ms, about half of what a worker
costs, and a grade starts a dozen workers. The same memory in 2 MiB pages takes 512 times fewer
entries (4-5 ms a fork and exit). A child that writes to such a page still copies only the 4 KiB it
wrote (the kernel splits the mapping).

``MADV_COLLAPSE`` (Linux 6.1) does it at once, whatever the system's transparent-huge-page policy;
it allocates every missing page of a range it collapses, so only ranges that are already mostly in
memory are collapsed. Anywhere it is missing or refused, nothing changes but the speed.
"""

from __future__ import annotations

import ctypes
import re
import threading
from typing import Callable, Final

__all__ = ["collapse", "collapse_meanwhile"]

_MADV_HUGEPAGE: Final = 14
_MADV_COLLAPSE: Final = 25
_HUGE: Final = 2 * 1024 * 1024
_MIN_BYTES: Final = 4 * _HUGE
_MIN_RESIDENT: Final = 0.9
"""Share of a range that must already be in memory: collapsing an emptier one would fill it."""
_RANGE: Final = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$")


def collapse(smaps: str = "/proc/self/smaps") -> int:
    """Move this process's large private writable anonymous ranges into huge pages; the bytes moved."""
    return _collapsing(smaps)()


def collapse_meanwhile(smaps: str = "/proc/self/smaps") -> threading.Thread:
    """``collapse`` in a thread (it takes about half a second): the process goes on answering meanwhile.

    The ranges are found first, in the caller's thread; the thread only makes system calls, so a fork
    meanwhile finds no lock of this module held."""
    thread = threading.Thread(target=_collapsing(smaps), name="huge pages", daemon=True)
    thread.start()
    return thread


def _collapsing(smaps: str) -> Callable[[], int]:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open(smaps, encoding="ascii", errors="replace") as f:
            ranges = _anonymous_ranges(f.read())
    except (OSError, AttributeError):
        return lambda: 0
    # Only whole huge pages inside a range can be collapsed.
    whole = [(first, last - first) for start, end in ranges
             if (last := end // _HUGE * _HUGE) - (first := -(-start // _HUGE) * _HUGE) >= _MIN_BYTES]

    def run() -> int:
        moved = 0
        for first, size in whole:
            madvise(first, size, _MADV_HUGEPAGE)  # keeps them huge should the kernel move them
            if madvise(first, size, _MADV_COLLAPSE) == 0:
                moved += size
        return moved

    return run


def _anonymous_ranges(smaps: str) -> list[tuple[int, int]]:
    """(start, end) of each private writable range with no file behind it (the heap, the allocators' arenas)
    that is mostly in memory already."""
    found: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for line in smaps.splitlines():
        head = _RANGE.match(line)
        if head is not None:
            start, end, perms, inode, name = head.groups()
            eligible = perms.startswith("rw") and perms.endswith("p") and inode == "0" and name in ("", "[heap]")
            current = (int(start, 16), int(end, 16)) if eligible else None
        elif current is not None and line.startswith("Anonymous:"):
            start, end = current
            if int(line.split()[1]) * 1024 >= _MIN_RESIDENT * (end - start):
                found.append(current)
            current = None
    return found
