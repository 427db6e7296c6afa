"""The batch's template moves its memory into huge pages: only ranges that are anonymous, private, writable
and already in memory, so that nothing is filled that was not there, and a fork of it copies fewer entries."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from harness.sandbox import huge_pages
from harness.sandbox.launch import Launcher

MIB = 1024 * 1024

SMAPS = textwrap.dedent("""\
    55d000000000-55d006400000 rw-p 00000000 00:00 0                          [heap]
    Size:             102400 kB
    Anonymous:        100000 kB
    7f0000000000-7f0004000000 rw-p 00000000 00:00 0 
    Size:              65536 kB
    Anonymous:          1024 kB
    7f1000000000-7f1002000000 r--p 00000000 08:01 1234                       /usr/lib/libtorch_cpu.so
    Size:              32768 kB
    Anonymous:         32768 kB
    7f2000000000-7f2002000000 rw-s 00000000 00:05 99                         /dev/zero (deleted)
    Size:              32768 kB
    Anonymous:         32768 kB
    7f3000000000-7f3002000000 r--p 00000000 00:00 0 
    Size:              32768 kB
    Anonymous:         32768 kB
    7f4000000000-7f4001800000 rw-p 00000000 00:00 0 
    Size:              24576 kB
    Anonymous:         24576 kB
""")


def test_only_private_writable_anonymous_ranges_already_in_memory_are_chosen():
    # The heap (98% resident) and the last range; not the sparse arena (collapsing would fill 63 MB),
    # not a library, not shared memory, not a read-only range.
    assert huge_pages._anonymous_ranges(SMAPS) == [(0x55d000000000, 0x55d006400000),
                                                    (0x7f4000000000, 0x7f4001800000)]


def test_a_missing_smaps_moves_nothing(tmp_path):
    assert huge_pages.collapse(str(tmp_path / "absent")) == 0


PROBE = textwrap.dedent("""\
    import mmap, sys
    from harness.sandbox import huge_pages
    block = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    block.write(b"x" * (64 << 20))  # resident, as an imported library's heap is
    def huge():
        return int(open("/proc/self/smaps_rollup").read().split("AnonHugePages:")[1].split()[0])
    before = huge()
    huge_pages.collapse_meanwhile().join()
    grown = huge() - before
    print(huge_pages.collapse(), grown)  # moved again: the same ranges, now huge, where the kernel can
""")


def _collapses() -> bool:
    """Linux 6.1 or later (MADV_COLLAPSE), built with transparent huge pages."""
    if not sys.platform.startswith("linux") or not os.path.isdir("/sys/kernel/mm/transparent_hugepage"):
        return False
    release = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return release is not None and tuple(map(int, release.groups())) >= (6, 1)


@pytest.mark.skipif(not _collapses(), reason="this kernel has no MADV_COLLAPSE (Linux 6.1) or no huge pages")
def test_a_resident_range_ends_in_huge_pages_where_the_kernel_can():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True)
    moved, grown_kib = map(int, out.stdout.split())
    # In a thread, while the process goes on.
    assert moved % (2 * MIB) == 0
    assert grown_kib * 1024 >= 32 * MIB  # most of the 64 MiB block, in 2 MiB pages


def test_only_a_batch_spends_start_up_time_on_it():
    single = Launcher.__new__(Launcher)
    single.many, single.mode, single.user = False, "basic", None
    batch = Launcher.__new__(Launcher)
    batch.many, batch.mode, batch.user = True, "basic", None
    assert "many" not in single._command(7)[0]
    assert single._command(7)[0][-1] == "7"
    assert batch._command(7)[0][-2:] == ["7", "many"]
