"""The grader protects its own process, sandbox or not: nothing a submission leaves behind is imported later."""

import ctypes
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "tests" / "solutions"
PR_GET_DUMPABLE = 3


def test_no_module_is_imported_after_submissions_have_run():
    # In a fresh interpreter: every module the grader needs is imported before the first worker
    # starts, so a module planted by a submission (where it could write one) is never loaded.
    script = textwrap.dedent(f"""
        import sys
        from harness.grade import GradeOptions, grade, protect_grader
        from harness.sandbox.launch import Launcher
        protect_grader()
        before = set(sys.modules)
        with Launcher() as launcher:
            for name in ("overwrite_grad.py", "flipped_transpose.py", "hostile_os_exit.py"):
                grade({str(SOLUTIONS)!r} + "/" + name, GradeOptions(max_examples=20, level="core"), launcher)
        print(sorted(set(sys.modules) - before))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_grader_cannot_be_traced_or_read_by_its_own_user():
    from harness.grade import protect_grader

    protect_grader()
    assert ctypes.CDLL(None).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


@pytest.mark.skipif(shutil.which("grade") is None, reason="the grade command is not installed")
def test_modules_in_the_working_folder_are_never_imported(tmp_path):
    for name in ("torch", "hypothesis", "yaml"):
        (tmp_path / f"{name}.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'a').write({name!r})\n")
    submission = tmp_path / "solution.py"
    submission.write_text("class Tensor:\n    pass\n")
    done = subprocess.run(["grade", "solution.py", "--level", "core", "--format", "json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1, 3), done.stderr[-2000:]
    assert not (tmp_path / "imported").exists()
