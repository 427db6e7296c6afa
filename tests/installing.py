"""The grader as users install it: built with the standard frontend, installed into a fresh venv.

The tests that need it (``test_installed.py``, the Gradescope recipe's test) work offline: the
venv links the test environment's own packages (torch, click, PyYAML, hypothesis, numpy and what
they need) through a ``.pth`` file, so installing the grader downloads nothing. The venv lives
in a 0700 folder under ``/tmp``, where a grader's venv may live, and the sandbox must still find
its interpreter.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The grader's source tree."""
SKIPPED = (".git", ".venv", "build", "dist", "tests", "__pycache__", ".hypothesis", ".pytest_cache", "results")


def environment_folders() -> list[str]:
    """The folders this test environment imports installed packages from: its site-packages, and
    its base interpreter's when the venv shares them. Never the source tree."""
    folders = [*site.getsitepackages(), site.getusersitepackages(), sysconfig.get_paths()["purelib"]]
    chosen = []
    for folder in folders:
        real = os.path.realpath(folder)
        if os.path.isdir(real) and real not in chosen and not Path(real).is_relative_to(ROOT):
            chosen.append(real)
    return chosen


def build(into: Path) -> tuple[Path, Path]:
    """(sdist, wheel) of a copy of the source tree, built with ``python -m build`` (the wheel from the
    sdist, so a file the sdist forgets is missing from the wheel too) and no build isolation: the
    test environment's setuptools builds them, offline."""
    source = into / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*SKIPPED, "*.egg-info"))
    out = into / "dist"
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def fresh_venv(folder: Path) -> Path:
    """A new venv at ``folder`` that sees this environment's packages but not the grader: its ``python``."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
    return link_environment(folder)


def link_environment(venv: Path) -> Path:
    """Let the venv at ``venv`` import this environment's packages (a ``.pth`` file), so that installing the
    grader there downloads nothing: its ``python``. The setuptools ``venv`` bundles is removed, so the
    linked one (new enough to build the grader's wheel) builds."""
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "_test_environment.pth").write_text("".join(f"{p}\n" for p in environment_folders()))
    subprocess.run([str(python), "-m", "pip", "uninstall", "-q", "-y", "setuptools"], check=True, timeout=120,
                   env=offline())
    return python


def offline() -> dict[str, str]:
    """The environment for pip in a fresh venv: no index, no build isolation (what it needs is linked)."""
    return {**os.environ, "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_CONSTRAINT": "", "PYTHONPATH": ""}


def private_folder(name: str) -> Path:
    """A new 0700 folder under ``/tmp`` (pytest's own may live elsewhere, under ``--basetemp``)."""
    return Path(tempfile.mkdtemp(prefix=f"grader-{name}-", dir="/tmp"))


if __name__ == "__main__":  # ``python installing.py VENV``: what a shell recipe runs after making a venv
    link_environment(Path(sys.argv[1]))
