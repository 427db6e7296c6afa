"""The Gradescope autograder, as the README builds it and as Gradescope runs it: the zip from its three
blocks, its ``setup.sh`` installing the grader into a fresh venv (a regular install, not editable:
its apt line aside, and offline, the venv linking this environment's packages), and its
``run_autograder`` grading submissions in a folder laid out as ``/autograder`` is.
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

from installing import offline, private_folder

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
INSTALLING = ROOT / "tests" / "installing.py"


def _block(marker: str) -> str:
    """The README's shell block whose first comment line is ``# Gradescope: <marker>``."""
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        if f"# Gradescope: {marker}\n" in block:
            return block
    raise AssertionError(f"the README has no block marked '# Gradescope: {marker}'")


def _setup_as_tested(setup: str) -> str:
    """``setup.sh`` as written, but for its apt lines (root's business) and one line after the venv is made
    that links this environment's packages into it (so pip needs no network)."""
    lines = []
    for line in setup.splitlines():
        if line.lstrip().startswith("apt-get "):
            continue
        lines.append(line)
        if " -m venv " in line:
            lines.append(f'{sys.executable} {INSTALLING} "$AUTOGRADER/venv"')
    assert any("-m venv" in line for line in lines) and any("pip\" install" in line for line in lines), setup
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def autograder() -> Path:
    """``/autograder`` after Gradescope unpacked the README's zip into ``source`` and ran ``setup.sh``."""
    if shutil.which("zip") is None or not (ROOT / ".git").exists():
        pytest.skip("building the zip needs zip and the grader's git checkout")
    folder = private_folder("gradescope")
    try:
        work = folder / "recipe"
        work.mkdir()
        (work / "setup.sh").write_text(_block("setup.sh"))
        (work / "run_autograder").write_text(_block("run_autograder"))
        subprocess.run(["bash", "-n", "setup.sh"], cwd=work, check=True)
        subprocess.run(["bash", "-eu", "-c", _block("the autograder zip")], cwd=work, check=True,
                       env={**os.environ, "GRADER": str(ROOT)}, timeout=120)
        with zipfile.ZipFile(work / "autograder.zip") as zf:
            names = set(zf.namelist())
            assert {"setup.sh", "run_autograder", "grader/pyproject.toml", "grader/harness/cli/group.py"} <= names
            root = folder / "autograder"
            zf.extractall(root / "source")
        shims = folder / "bin"
        shims.mkdir()
        (shims / "python3.11").symlink_to(sys.executable)
        setup = root / "source" / "setup.sh"
        setup.write_text(_setup_as_tested(setup.read_text()))
        done = subprocess.run(["bash", str(setup)], capture_output=True, text=True, timeout=600,
                              env={**offline(), "AUTOGRADER": str(root), "PATH": f"{shims}:{os.environ['PATH']}"})
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        grade = root / "venv" / "bin" / "grade"
        where = subprocess.run([str(root / "venv" / "bin" / "python"), "-c", "import harness; print(harness.__file__)"],
                               capture_output=True, text=True, check=True, cwd=folder).stdout
        assert where.startswith(str(root / "venv")) and grade.exists(), f"the grader imports from {where}"
        yield root
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _run(root: Path, submission: dict[str, str], options: str) -> tuple[subprocess.CompletedProcess, dict]:
    if (root / "submission").exists():
        shutil.rmtree(root / "submission")
        shutil.rmtree(root / "results", ignore_errors=True)
    (root / "submission").mkdir()
    for name, text in submission.items():
        (root / "submission" / name).write_text(text)
    done = subprocess.run(["bash", str(root / "source" / "run_autograder")], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "AUTOGRADER": str(root), "GRADE_OPTIONS": options,
                                            "PYTHONPATH": ""})
    return done, json.loads((root / "results" / "results.json").read_text())


def _graded(root: Path, name: str, options: str) -> dict:
    """What ``grade`` itself (the installed one) gives the submission's file."""
    done = subprocess.run([str(root / "venv" / "bin" / "grade"), name, "--format", "json", *options.split()],
                          capture_output=True, text=True, timeout=300, cwd=root / "submission",
                          env={**os.environ, "PYTHONPATH": ""})
    return json.loads(done.stdout)


def test_the_installed_recipe_gives_a_correct_submission_full_marks(autograder):
    engine = (ROOT / "reference" / "engine.py").read_text()
    done, results = _run(autograder, {"solution.py": engine}, "--level core --max-examples 5")
    assert done.returncode == 0, done.stderr[-2000:]
    assert results["score"] == results["max_score"] == 60.0
    assert results["output"].startswith("graded: score 60.0 of 60.0\ninterview bar: passed")
    numbers = {t["number"]: t for t in results["tests"]}
    assert len(numbers) == len(results["tests"]) and all(n.startswith("1.") for n in numbers)
    # Ordered by number, each concept's checks come together.
    ordered = [numbers[n]["tags"][1] for n in sorted(numbers, key=lambda n: tuple(map(int, n.split("."))))]
    assert ordered == sorted(ordered, key=ordered.index)
    assert all(isinstance(t["execution_time"], float) for t in results["tests"]) and results["execution_time"] > 0


def test_the_installed_recipe_grades_a_notebook_as_grade_does(autograder):
    engine = (ROOT / "tests" / "solutions" / "overwrite_grad.py").read_text()
    notebook = json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# my engine"]},
                                     {"cell_type": "code", "metadata": {}, "source": engine.splitlines(True)}],
                           "metadata": {}, "nbformat": 4})
    done, results = _run(autograder, {"my engine.ipynb": notebook}, "--level core --max-examples 5")
    assert done.returncode == 0, done.stderr[-2000:]
    graded = _graded(autograder, "my engine.ipynb", "--level core --max-examples 5")
    assert results["score"] == round(graded["score"], 2) and 0 < results["score"] < 60.0
    assert sorted(t["name"].split(": ", 1)[0] for t in results["tests"]) == sorted(c["id"] for c in graded["checks"])
    assert "1. gradient overwritten instead of accumulated" in results["output"]


def test_a_submission_the_recipe_cannot_pick_a_file_from_is_told_what_to_name_it(autograder):
    done, results = _run(autograder, {"engine.py": "x = 1\n", "helpers.py": "y = 2\n"}, "--level core")
    assert done.returncode == 0
    assert results["score"] == 0.0 and results["tests"] == []
    assert results["output"] == ("could not be graded: solution.py: no such file; its folder holds engine.py, helpers.py"
                                 "\n\nName your engine solution.py, or submit exactly one .py or .ipynb file: either "
                                 "is what the autograder grades.")


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
