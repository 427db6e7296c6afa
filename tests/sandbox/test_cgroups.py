"""A cgroup per submission, where the grader may make one: the whole tree's memory is bounded, not each process."""

import textwrap

import pytest

from harness.sandbox import Launcher, Limits
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


def test_many_children_share_one_memory_limit(launcher, tmp_path):
    # Six children of 300 MiB each: every process is under its own limit, the tree is not.
    path = tmp_path / "hog.py"
    path.write_text(textwrap.dedent('''
        import os, time
        for _ in range(6):
            if os.fork() == 0:
                try:
                    blob = bytearray(300 * 1024 * 1024)
                    for i in range(0, len(blob), 4096):
                        blob[i] = 1
                    time.sleep(20)
                finally:
                    os._exit(0)
        time.sleep(2)
        class Tensor:
            pass
    '''))
    box = launcher.sandbox(Limits(memory_mb=512, tree_memory_mb=1024, import_seconds=20))
    try:
        assert box.tree is not None
        box.spawn(path)
        peak = box.tree.peak_memory()
        groups = list(box.tree.groups)
    finally:
        box.close()
    assert peak is not None and peak <= 1024 * MIB
    assert all(not group.exists() for group in groups), "the cgroups were left behind"


def test_the_groups_are_removed_with_the_sandbox(launcher):
    box = launcher.sandbox(Limits())
    groups = list(box.tree.groups) if box.tree else []
    assert groups and all(group.exists() for group in groups)
    box.close()
    assert not any(group.exists() for group in groups)
