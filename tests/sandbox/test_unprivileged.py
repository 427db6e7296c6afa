"""The sandbox started by an unprivileged user: bubblewrap's user-namespace path, as on a candidate's laptop.

When the tests run as root, a system user is created for them and bubblewrap is
started as that user; when they already run unprivileged, every other sandbox
test has proven this path and these are skipped.
"""

import os
import pwd
from pathlib import Path

import pytest

from harness.grade import GradeOptions, grade
from harness.sandbox.launch import Launcher, Limits

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="already unprivileged: every sandbox test covers this path")


@pytest.fixture(scope="module")
def launcher(unprivileged_user):
    with Launcher("sandbox", user=unprivileged_user) as started:
        yield started


def test_the_sandbox_runs_as_the_user_in_a_user_namespace(launcher, unprivileged_user, tmp_path):
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
    assert int(uid) == pwd.getpwnam(unprivileged_user).pw_uid
    assert pid == "1"
    assert proc.strip() == "no /proc"


def test_bubblewraps_own_folders_are_read_only(launcher, tmp_path):
    # Created by an unprivileged bubblewrap, the root, /etc, /dev and /dev/shm belong to the
    # sandbox's user: without a read-only remount a submission writes there without limit,
    # and every later submission of the same template sees what it wrote.
    source = tmp_path / "probe.py"
    source.write_text("import os\nfor place in ('/', '/etc', '/grader', '/dev', '/dev/shm'):\n"
                      "    try:\n        open(os.path.join(place, 'planted'), 'w').close()\n"
                      "        print('wrote', place)\n    except OSError as exc:\n        print(exc.strerror)\n"
                      "class Tensor: pass\n")
    box = launcher.sandbox(Limits())
    try:
        worker = box.spawn(source)
        worker.kill()
        out = worker.output()["stdout"]
    finally:
        box.close()
    assert out.splitlines() == ["Read-only file system"] * 5


def test_the_reference_gets_full_marks_in_the_unprivileged_sandbox(launcher):
    report = grade(ROOT / "reference" / "engine.py", GradeOptions(level="core", max_examples=20), launcher)
    assert report.isolation == "sandbox"
    assert [c.id for c in report.checks if c.outcome != "passed"] == []
