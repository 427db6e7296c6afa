"""The grader as users install it: the wheel (built from the sdist) in a fresh venv, used from a scratch folder.

Everything else is tested from a checkout with an editable install; these tests prove that a
regular install carries what a grade needs (the spec library, the rubric, the shipped programs,
the model answer for the diagnosis) and that its sandbox still shows a submission nothing of the
grader beyond the worker's modules, although the installed packages sit in site-packages beside
torch.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.sandbox.launch import bubblewrap_missing
from harness.sandbox.view import OWN_PACKAGES
from harness.sandbox.zone import zone_files
from installing import ROOT, fresh_venv, offline, private_folder
from searching import grader_files_found, said, searcher

pytestmark = pytest.mark.slow

SPEC_FILES = sorted(str(p.relative_to(ROOT / "specs")) for p in (ROOT / "specs").rglob("*.yaml"))


@dataclass
class Installed:
    folder: Path
    python: Path
    grade: Path
    site: Path

    def run(self, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.grade), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": ""})


@pytest.fixture(scope="module")
def installed(built_grader):
    if bubblewrap_missing():
        pytest.fail(f"the installed grader's tests need bubblewrap: {bubblewrap_missing()}")
    _, wheel = built_grader
    folder = private_folder("installed")
    try:
        python = fresh_venv(folder / "venv")
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(wheel)],
                              capture_output=True, text=True, timeout=300, env=offline())
        assert done.returncode == 0, done.stdout + done.stderr
        site = Path(subprocess.run([str(python), "-c", "import harness, os; print(os.path.dirname(os.path.dirname("
                                    "harness.__file__)))"], capture_output=True, text=True, check=True,
                                   cwd=folder, env={**os.environ, "PYTHONPATH": ""}).stdout.strip())
        assert site.is_relative_to(folder / "venv"), f"the venv imports the grader from {site}, not its own install"
        (folder / "scratch").mkdir()
        yield Installed(folder, python, folder / "venv" / "bin" / "grade", site)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_wheel_carries_what_a_grade_needs(built_grader):
    sdist, wheel = built_grader
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert tops == set(OWN_PACKAGES)
    assert sorted(n.removeprefix("harness/data/specs/") for n in names if n.startswith("harness/data/specs/")) \
        == SPEC_FILES
    assert {"harness/data/rubric.yaml", "harness/data/concepts.yaml", "reference/engine.py",
            "candidate_template/solution.py", "candidate_template/minimal.py"} <= set(names)
    assert any(n.startswith("harness/data/examples/") for n in names)
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {f"specs/{f}" for f in SPEC_FILES} <= members and "setup.py" in members


def test_an_installed_grader_gives_the_model_answer_full_marks_in_the_sandbox(installed):
    engine = installed.folder / "scratch" / "engine_copy.py"
    shutil.copy(ROOT / "reference" / "engine.py", engine)
    done = installed.run(engine.name, "--format", "json", "--require-sandbox", cwd=engine.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["isolation"] == "sandbox" and report["status"] == "graded"
    assert report["score"] == report["max_score"] > 0
    spec_checks = [c for c in report["checks"] if c["id"].startswith("spec:")]
    assert spec_checks and all(c["outcome"] == "passed" for c in spec_checks)


def test_an_installed_grader_checks_its_spec_library(installed):
    done = installed.run("spec", "check", cwd=installed.folder / "scratch")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"in {len(SPEC_FILES)} files" in done.stdout, done.stdout


def test_an_installed_grader_shows_a_submission_nothing_of_itself(installed):
    targets = [str(installed.site / "reference" / "engine.py"), str(installed.site / "harness" / "diagnosis" / "mutants.py"),
               str(installed.site / "harness" / "data" / "specs" / "core" / "worked_examples.yaml"),
               str(ROOT / "reference" / "engine.py")]
    assert all(Path(t).is_file() for t in targets)
    path = searcher(installed.folder / "scratch", targets)
    done = installed.run(path.name, "--format", "json", "--level", "core", "--require-sandbox", cwd=path.parent)
    report = said(json.loads(done.stdout)["output"]["stdout"])
    zone = {str(f.relative_to(installed.site)) for f in zone_files(installed.site)}
    assert zone == {str(f.relative_to(ROOT)) for f in zone_files(ROOT) if "__pycache__" not in f.parts} | {
        z for z in zone if "__pycache__" in z}
    assert report["roots"] >= 4 and "harness/sandbox/worker/evaluator.py" in report["grader"], report
    assert grader_files_found(report, zone) == []
