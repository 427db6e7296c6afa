"""A cgroup per submission, where the grader may make one: the whole tree's memory is bounded, not each process."""

import os
import subprocess
import textwrap

import pytest

from harness.sandbox.launch import Launcher, Limits, WorkerDied
from harness.sandbox.cgroups import TreeLimits

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def launcher():
    probe = TreeLimits.create(64 * MIB, 8)
    if probe is None:
        pytest.skip("this machine lets the grader make no cgroup (not root, or no delegated controllers)")
    probe.close()
    with Launcher() as started:
        yield started


def test_the_workers_share_one_memory_limit(launcher, tmp_path):
    # Workers may not fork, but two run at once: each is under its own limit, the pair is not.
    path = tmp_path / "hog.py"
    path.write_text(textwrap.dedent('''
        blob = bytearray(400 * 1024 * 1024)
        for i in range(0, len(blob), 4096):
            blob[i] = 1
        class Tensor:
            pass
    '''))
    box = launcher.sandbox(Limits(memory_mb=512, tree_memory_mb=600, import_seconds=20))
    outcomes = []
    try:
        assert box.tree is not None
        for _ in range(2):
            try:
                outcomes.append(box.spawn(path).hello.get("kind"))
            except WorkerDied:
                outcomes.append("died")
        peak = box.tree.peak_memory()
        groups = list(box.tree.groups)
    finally:
        box.close()
    # 2 x 400 MiB: the kernel reclaims, swaps or kills to keep the pair within 600.
    assert peak is not None and peak <= 600 * MIB, (peak, outcomes)
    assert all(not group.exists() for group in groups), "the cgroups were left behind"


def test_a_killed_graders_cgroups_are_removed_by_the_next(launcher):
    gone = _dead_pid()
    probe = TreeLimits.create(64 * MIB, 8)
    parents = [group.parent for group in probe.groups]
    probe.close()
    stale = [parent / f"autograd-grader-{gone}-1" for parent in parents]
    live = [parent / f"autograd-grader-{os.getpid()}-999999" for parent in parents]
    for group in stale + live:
        group.mkdir()
    try:
        box = launcher.sandbox(Limits())
        box.close()
        assert not any(group.exists() for group in stale)
        assert all(group.exists() for group in live)  # this grader is alive: its groups are its own business
    finally:
        for group in stale + live:
            if group.exists():
                group.rmdir()


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_the_groups_are_removed_with_the_sandbox(launcher):
    box = launcher.sandbox(Limits())
    groups = list(box.tree.groups) if box.tree else []
    assert groups and all(group.exists() for group in groups)
    box.close()
    assert not any(group.exists() for group in groups)
