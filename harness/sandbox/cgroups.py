"""A cgroup per submission, where the grader may make one: memory and processes bounded for the whole tree.

Resource limits count per process (an address space each) and per user
namespace (processes); a cgroup counts the submission as a whole, whatever
it forks. The grader makes one below its own cgroup when the kernel lets it
(root with cgroup v1 controllers, or a delegated cgroup v2 subtree), moves the
submission's zygote into it before any worker exists, and removes it when the
submission is done. Where it cannot, nothing changes: the per-process limits
still hold, and the report does not depend on it.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path
from typing import Final

__all__ = ["TreeLimits"]

_COUNTER = itertools.count(1)
_PREFIX: Final = "autograd-grader-"
"""Then the grader's pid and a counter: whose cgroup it is, so a later grader knows which are stale."""
_REMOVE_SECONDS: Final = 2.0


class TreeLimits:
    """Memory and process limits for one submission's whole process tree."""

    def __init__(self, groups: list[Path]) -> None:
        self.groups = groups

    @classmethod
    def create(cls, memory_bytes: int, processes: int) -> TreeLimits | None:
        """New cgroups with these limits, or None where this machine does not let the grader make them."""
        name = f"{_PREFIX}{os.getpid()}-{next(_COUNTER)}"
        made: list[Path] = []
        try:
            for group, settings in _groups(name, memory_bytes, processes):
                remove_stale(group.parent)
                group.mkdir()
                made.append(group)
                for file, value in settings:
                    (group / file).write_text(str(value))
        except OSError:
            TreeLimits(made).close()
            return None
        return cls(made) if made else None

    def add(self, pid: int) -> bool:
        """Put process ``pid`` (and so everything it will start) under the limits."""
        try:
            for group in self.groups:
                (group / "cgroup.procs").write_text(str(pid))
        except OSError:
            return False
        return True

    def peak_memory(self) -> int | None:
        """The most memory the tree used at once, in bytes, where the kernel tells."""
        for group in self.groups:
            for file in ("memory.max_usage_in_bytes", "memory.peak"):
                try:
                    return int((group / file).read_text())
                except (OSError, ValueError):
                    continue
        return None

    def close(self) -> None:
        """Remove the cgroups once their processes are gone (a kill takes a moment to finish)."""
        deadline = time.monotonic() + _REMOVE_SECONDS
        for group in self.groups:
            while True:
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)
        self.groups = []


def remove_stale(parent: Path) -> list[Path]:
    """Remove the cgroups in ``parent`` that graders since killed left behind; the ones removed.

    A grader that is killed cannot remove its own. A cgroup whose grader pid no longer
    exists here is removed when it is empty (the kernel refuses to remove one that still
    holds a process, so nothing running is touched).
    """
    removed = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for group in entries:
        owner = group.name.removeprefix(_PREFIX).split("-")[0]
        if not group.name.startswith(_PREFIX) or not owner.isdigit() or _alive(int(owner)):
            continue
        try:
            group.rmdir()
            removed.append(group)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: it exists
    return True


def _groups(name: str, memory_bytes: int, processes: int) -> list[tuple[Path, list[tuple[str, int]]]]:
    """Where the cgroups go and what to write in them: one per v1 controller, or one v2 cgroup."""
    own = _own_cgroups()
    mounts = _mounts()
    if "memory" in own and "memory" in mounts:  # cgroup v1
        found = [(mounts["memory"] / own["memory"].lstrip("/") / name, [("memory.limit_in_bytes", memory_bytes)])]
        if "pids" in own and "pids" in mounts:
            found.append((mounts["pids"] / own["pids"].lstrip("/") / name, [("pids.max", processes)]))
        return found
    if "" in own and "" in mounts:  # cgroup v2: only where the memory controller is delegated to our children
        parent = mounts[""] / own[""].lstrip("/")
        try:
            delegated = set((parent / "cgroup.subtree_control").read_text().split())
        except OSError:
            return []
        if "memory" in delegated:
            settings = [("memory.max", memory_bytes)] + ([("pids.max", processes)] if "pids" in delegated else [])
            return [(parent / name, settings)]
    return []


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and under "" its v2 path."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(","):
                found[controller] = parts[2]
    return found


def _mounts() -> dict[str, Path]:
    """Mount points per v1 controller, and under "" the v2 hierarchy's."""
    found: dict[str, Path] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if " - " not in line:
            continue
        after = line.split(" - ", 1)[1].split()
        if len(after) < 3:
            continue
        fstype, options = after[0], after[2].split(",")
        if fstype == "cgroup":
            for option in options:
                if option in ("memory", "pids"):
                    found.setdefault(option, Path(fields[4]))
        elif fstype == "cgroup2":
            found.setdefault("", Path(fields[4]))
    return found
