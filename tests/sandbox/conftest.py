"""Fixtures shared by the sandbox tests."""

import os
import pwd
import subprocess
import sys

import pytest

from harness.sandbox import bubblewrap_missing

UNPRIVILEGED_USER = "autograd-grader-test"


@pytest.fixture(scope="session")
def unprivileged_user() -> str:
    """A system user to start bubblewrap as (created when the tests run as root), or a skip."""
    if os.geteuid() != 0:
        pytest.skip("already unprivileged: every sandbox test covers this path")
    if bubblewrap_missing():
        pytest.fail(bubblewrap_missing())
    try:
        pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        UNPRIVILEGED_USER], check=True)
    entry = pwd.getpwnam(UNPRIVILEGED_USER)
    probe = subprocess.run([sys.executable, "-c", "import torch"], user=entry.pw_uid, group=entry.pw_gid,
                           extra_groups=[], capture_output=True, cwd="/")
    if probe.returncode != 0:
        pytest.skip(f"{UNPRIVILEGED_USER} cannot run {sys.executable} (its folders are not searchable; "
                    ".ci/run makes them so)")
    return UNPRIVILEGED_USER
