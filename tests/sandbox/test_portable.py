"""Where Linux's facilities are missing (a candidate on a Mac), the grader still grades, with basic isolation.

The Linux-only pieces are taken away from a copy of the grader by a ``sitecustomize`` module,
which every process of the grade imports (the grader, and the sandbox's template, whose path
is the copy's folder): no bubblewrap on the path; no pidfds, ``SO_PASSCRED``, ``memfd`` or
``unshare`` in the standard library; no ``prctl``, ``unshare``, ``setns``, ``mount`` or
``capset`` in the C library; and no ``/proc`` or ``/sys`` for Python to open.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

WITHOUT_LINUX = textwrap.dedent('''
    import builtins, ctypes, io, os, signal, socket

    for module, names in ((os, ("pidfd_open", "memfd_create", "unshare", "setns", "sched_getaffinity",
                                "sched_setaffinity", "getresuid", "getresgid", "setresuid", "setresgid")),
                          (signal, ("pidfd_send_signal",)),
                          (socket, ("SO_PASSCRED", "SCM_CREDENTIALS", "SO_PEERCRED"))):
        for name in names:
            if hasattr(module, name):
                delattr(module, name)

    _LINUX_ONLY = {"prctl", "unshare", "setns", "mount", "umount2", "capset", "pivot_root"}


    class _Library(ctypes.CDLL):
        def __getattr__(self, name):
            if name in _LINUX_ONLY:
                raise AttributeError(name)
            return super().__getattr__(name)


    ctypes.CDLL = _Library
    _open, _listdir = builtins.open, os.listdir


    def _pseudo(path):
        return isinstance(path, (str, bytes, os.PathLike)) and os.fsdecode(path).startswith(("/proc", "/sys"))


    def open_without_proc(file, *args, **kwargs):
        if _pseudo(file):
            raise FileNotFoundError(2, "No such file or directory", file)
        return _open(file, *args, **kwargs)


    def listdir_without_proc(path="."):
        if _pseudo(path):
            raise FileNotFoundError(2, "No such file or directory", path)
        return _listdir(path)


    builtins.open = io.open = open_without_proc
    os.listdir = listdir_without_proc
    ''')


@pytest.fixture(scope="module")
def without_linux(tmp_path_factory) -> Path:
    """A copy of the grader whose every process runs without Linux's own facilities."""
    root = tmp_path_factory.mktemp("portable")
    for folder in ("harness", "reference", "candidate_template", "specs"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "sitecustomize.py").write_text(WITHOUT_LINUX)
    (root / "bin").mkdir()  # the path: no bwrap on it
    return root


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(root), "PATH": str(root / "bin"), "PYTHONDONTWRITEBYTECODE": "1"}


def test_every_module_imports_without_linux_only_facilities(without_linux):
    script = textwrap.dedent('''
        import importlib, os, pkgutil, socket
        import harness
        assert not hasattr(os, "pidfd_open") and not hasattr(socket, "SO_PASSCRED")
        names = [m.name for m in pkgutil.walk_packages(harness.__path__, "harness.") if not m.name.endswith("__main__")]
        for name in names:
            importlib.import_module(name)
        print(len(names))
        ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=without_linux, env=_env(without_linux))
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout) > 100


def test_a_grade_without_linux_only_facilities_is_basic_and_says_why(without_linux):
    engine = without_linux / "engine_copy.py"
    shutil.copy(ROOT / "reference" / "engine.py", engine)
    done = subprocess.run([sys.executable, "-m", "harness.cli", engine.name, "--level", "core", "--format", "json",
                           "--max-examples", "10"], capture_output=True, text=True, timeout=300, cwd=without_linux,
                          env=_env(without_linux))
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["isolation"] == "basic"
    assert report["score"] == report["max_score"] == 60.0, [c for c in report["checks"] if c["outcome"] != "passed"]
    text = subprocess.run([sys.executable, "-m", "harness.cli", engine.name, "--level", "core", "--max-examples", "10"],
                          capture_output=True, text=True, timeout=300, cwd=without_linux, env=_env(without_linux))
    assert "bubblewrap is not installed" in text.stdout, text.stdout[:2000]
