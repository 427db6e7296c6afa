"""Fixtures shared by the sandbox tests."""

import os
import pwd
import subprocess

import pytest

from harness.sandbox.launch import bubblewrap_missing

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
    # The user need not reach the interpreter or the checkout (a 0700 home above them): the
    # grader hands bubblewrap each folder as a descriptor it opened itself.
    return UNPRIVILEGED_USER
