"""The Gradescope autograder, as the README builds it: the zip from its three blocks, and its
``run_autograder`` grading a submission in a folder laid out as ``/autograder`` is.

The grader inside the zip (the checkout's committed source) is what grades: ``GRADE`` runs it from
the unpacked zip, since the test cannot run ``setup.sh`` (it installs packages as root).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _block(marker: str) -> str:
    """The README's shell block whose first comment line is ``# Gradescope: <marker>``."""
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        if f"# Gradescope: {marker}\n" in block:
            return block
    raise AssertionError(f"the README has no block marked '# Gradescope: {marker}'")


@pytest.fixture(scope="module")
def autograder(tmp_path_factory) -> Path:
    """The zip built by the README's recipe, unpacked as Gradescope unpacks it into /autograder/source."""
    if shutil.which("zip") is None or not (ROOT / ".git").exists():
        pytest.skip("building the zip needs zip and the grader's git checkout")
    work = tmp_path_factory.mktemp("recipe")
    (work / "setup.sh").write_text(_block("setup.sh"))
    (work / "run_autograder").write_text(_block("run_autograder"))
    subprocess.run(["bash", "-n", "setup.sh"], cwd=work, check=True)
    subprocess.run(["bash", "-eu", "-c", _block("the autograder zip")], cwd=work, check=True,
                   env={**os.environ, "GRADER": str(ROOT)}, timeout=120)
    with zipfile.ZipFile(work / "autograder.zip") as zf:
        names = set(zf.namelist())
        assert {"setup.sh", "run_autograder", "grader/pyproject.toml", "grader/harness/cli/group.py"} <= names
        root = work / "autograder-root"
        zf.extractall(root / "source")
    return root


def _run(root: Path, submission: dict[str, str], options: str) -> tuple[subprocess.CompletedProcess, dict]:
    if (root / "submission").exists():
        shutil.rmtree(root / "submission")
        shutil.rmtree(root / "results", ignore_errors=True)
    (root / "submission").mkdir()
    for name, text in submission.items():
        (root / "submission" / name).write_text(text)
    grade = root / "grade"
    grader = root / "source" / "grader"
    grade.write_text(f"#!/bin/sh\nPYTHONPATH={grader} exec {sys.executable} -m harness.cli \"$@\"\n")
    grade.chmod(0o755)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "AUTOGRADER": str(root), "GRADE": str(grade),
                                            "GRADE_OPTIONS": options})
    return done, json.loads((root / "results" / "results.json").read_text())


def test_the_readme_autograder_grades_a_submission(autograder):
    buggy = (ROOT / "tests" / "solutions" / "overwrite_grad.py").read_text()
    done, results = _run(autograder, {"engine.py": buggy},
                         "--level core --max-examples 5 --visibility core.order*=hidden")
    assert done.returncode == 0, done.stderr[-2000:]
    assert 0 < results["score"] < results["max_score"] == 60.0
    top = results["output"].splitlines()
    assert top[0] == f"graded: score {results['score']:.1f} of 60.0"
    assert top[1].startswith("interview bar: not passed (core ")
    assert "Fix first" in top and "1. gradient overwritten instead of accumulated" in results["output"]
    # the snippet imports the file the student submitted, by its name
    assert "Tensor = runpy.run_path('engine.py')['Tensor']" in results["output"]
    assert str(autograder) not in json.dumps(results)
    tests = {t["name"].split(": ", 1)[0]: t for t in results["tests"]}
    assert tests["core.order"]["visibility"] == "hidden" and tests["core.accumulation"]["visibility"] == "visible"
    # each test's points are rounded to 2 decimals: their sum is the score within half a cent each
    total = sum(t["score"] for t in results["tests"])
    assert total == pytest.approx(results["score"], abs=0.005 * len(results["tests"]))


def test_a_file_that_cannot_be_graded_still_gets_results(autograder):
    done, results = _run(autograder, {"solution.py": "\x00 not text"}, "--level core")
    assert done.returncode == 0
    assert results["score"] == 0.0 and results["tests"] == []
    assert results["output"].startswith("could not be graded: solution.py: not a Python source file")
