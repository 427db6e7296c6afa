"""The sandbox started by an unprivileged user: bubblewrap's user-namespace path, as on a candidate's laptop.

When the tests run as root, a system user is created for them and bubblewrap is
started as that user; when they already run unprivileged, every other sandbox
test has proven this path and these are skipped.
"""

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from harness.grade import GradeOptions, grade
from harness.sandbox import Launcher, Limits, bubblewrap_missing

USER = "autograd-grader-test"
ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="already unprivileged: every sandbox test covers this path")


@pytest.fixture(scope="module")
def user() -> str:
    if bubblewrap_missing():
        pytest.fail(bubblewrap_missing())
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
    entry = pwd.getpwnam(USER)
    probe = subprocess.run([sys.executable, "-c", "import torch"], user=entry.pw_uid, group=entry.pw_gid,
                           extra_groups=[], capture_output=True, cwd="/")
    if probe.returncode != 0:
        pytest.skip(f"{USER} cannot run {sys.executable} (its folders are not searchable; .ci/run makes them so)")
    return USER


@pytest.fixture(scope="module")
def launcher(user):
    with Launcher("sandbox", user=user) as started:
        yield started


def test_the_sandbox_runs_as_the_user_in_a_user_namespace(launcher, tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("import os\nprint(os.getuid(), os.getpid(), open('/proc/self/uid_map').read() "
                      "if os.path.exists('/proc/self/uid_map') else 'no /proc')\nclass Tensor: pass\n")
    source.chmod(0o644)
    box = launcher.sandbox(Limits())
    try:
        worker = box.spawn(source)
        worker.kill()
        uid, pid, proc = worker.output()["stdout"].split(maxsplit=2)
    finally:
        box.close()
    assert box.isolation == "sandbox"
    assert int(uid) == pwd.getpwnam(USER).pw_uid
    assert pid == "1"
    assert proc.strip() == "no /proc"


def test_the_reference_gets_full_marks_in_the_unprivileged_sandbox(launcher):
    report = grade(ROOT / "reference" / "engine.py", GradeOptions(level="core", max_examples=20), launcher)
    assert report.isolation == "sandbox"
    assert [c.id for c in report.checks if c.outcome != "passed"] == []
