"""The sandbox works wherever Python lives: README's `grade reference/engine.py` scores 100 in the sandbox.

Each layout is built here, whatever this machine's own Python looks like: the interpreter's
folder is mounted (in a private mount namespace) under a 0700 "home" at its own path (its
library path is compiled in), and a venv is made under a 0700 folder in /tmp. Both are graded
as root and as an unprivileged user whose home it is (the user's grader modules are a copy
in a 0700 folder of its own); as root, the home layout is also graded with bubblewrap
started as a user who cannot enter that home, and without bubblewrap (the worker is uid
65534). The graded file is the model answer printing with numpy, as a candidate may, and
importing a standard module the template has not (``statistics``). Every layout is one
grade at the core level; no report may carry torch's NumPy warning.
"""

from __future__ import annotations

import json
import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.sandbox.launch import bubblewrap_missing

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BASE = Path(os.path.realpath(sys.base_prefix))
INTERPRETER = Path(os.path.realpath(sys.executable))
LAYOUTS = {"interpreter in a 0700 home": "home", "venv in a 0700 folder under /tmp": "venv"}
STARTED_AS_USER = "interpreter in the grader's 0700 home, bubblewrap started as a user"
BASIC = "interpreter in the grader's 0700 home, without bubblewrap"
GRADE = ["-m", "harness.cli", "{engine}", "--level", "core", "--max-examples", "10", "--format", "json",
         "--require-sandbox"]


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "building the layouts takes root (a private mount namespace); run the tests as root to cover them"
    for tool in ("unshare", "setpriv", "mount"):
        if shutil.which(tool) is None:
            return f"building the layouts takes util-linux's {tool}, which is not installed"
    if BASE.parent == Path("/") or BASE.is_relative_to("/usr") or not INTERPRETER.is_relative_to(BASE):
        return f"the interpreter lives in {BASE}, a system folder: it cannot be moved under a home here"
    try:
        import venv  # noqa: F401
    except ImportError:
        return "this Python has no venv module"
    return None


def _script(home: Path, work: Path, grader: Path, owner: str | None) -> str:
    """A shell script, run in a private mount namespace, that builds both layouts and grades in each."""
    stage, name = work / "stage", BASE.name
    python = home / name / INTERPRETER.relative_to(BASE)
    venv = work / "tmp" / "venv"
    ids = pwd.getpwnam(owner) if owner else None
    as_owner = f"setpriv --reuid={ids.pw_uid} --regid={ids.pw_gid} --clear-groups " if ids else ""
    env = f"env -i PATH=/usr/bin:/bin LANG=C.UTF-8 HOME={work / 'tmp'} "
    engine = work / "tmp" / "engine.py"
    grade = " ".join(shlex.quote(a.format(engine=engine)) for a in GRADE)
    uid = f",uid={ids.pw_uid},gid={ids.pw_gid}" if ids else ""
    out = work / "out"
    # A user reaches its own home: where a folder above this home is closed to others (root's 0700
    # home holding the interpreter), it is covered, in this namespace only, by an open empty one.
    blocked = next((a for a in reversed(home.parents) if owner and not os.stat(a).st_mode & 0o001), None)
    cover = [f"mount -t tmpfs -o mode=0755 layout-above {blocked}", f"mkdir -p {home}"] if blocked else []
    # The grades run at once (each mostly waits on its sandbox); the venv is made before its own.
    return "\n".join([
        "set -e",
        f"mkdir -p {stage}",
        f"mount --bind {BASE} {stage}",
        *cover,
        # The home: a 0700 folder at the interpreter's own parent, with only the interpreter in it.
        f"mount -t tmpfs -o mode=0700{uid} layout-home {home}",
        f"mkdir {home / name}",
        f"mount --move {stage} {home / name}",
        "cd /",
        f"{as_owner}{env}PYTHONPATH={grader} {python} {grade} > {out}/home.json 2> {out}/home.err &",
        *([] if owner else [  # without bubblewrap, as root: the worker is uid 65534, the home 0700
            f"{env}GRADER_ISOLATION=basic PYTHONPATH={grader} {python} "
            f"{grade.replace(' --require-sandbox', '')} > {out}/basic.json 2> {out}/basic.err &",
            # bubblewrap started as a user who cannot enter the grader's 0700 home
            f"{env}PYTHONPATH={grader} {python} -c "
            f"{shlex.quote(_AS_USER.format(engine=engine, tests=Path(__file__).parent))} "
            f"> {out}/as-user.json 2> {out}/as-user.err &"]),
        f"({as_owner}{env}{python} -m venv --without-pip --system-site-packages {venv} && "
        f"{as_owner}{env}{venv}/bin/python -c 'import site, sys; "
        f"open(site.getsitepackages()[0] + \"/grader.pth\", \"w\").write(sys.argv[1])' {grader} && "
        f"{as_owner}{env}{venv}/bin/python {grade} > {out}/venv.json) 2> {out}/venv.err &",
        "wait",
    ])


_AS_USER = """
import json, sys
from harness.grade import GradeOptions, grade
from harness.sandbox.launch import Launcher
sys.path.insert(0, "{tests}")
from conftest import UNPRIVILEGED_USER
with Launcher("sandbox", user=UNPRIVILEGED_USER) as launcher:
    report = grade("{engine}", GradeOptions(level="core", max_examples=10), launcher)
print(json.dumps(report.to_dict()))
"""


def _start(owner: str | None) -> tuple[subprocess.Popen, Path, list[tuple[str, str]]]:
    """Build the layouts for ``owner`` (root when None) and start grading in them: the process, its folder,
    and (layout, output stem) pairs."""
    work = Path(tempfile.mkdtemp(prefix="layout-", dir="/tmp"))  # 0700: the venv's folder under /tmp
    (work / "tmp").mkdir()
    (work / "out").mkdir()
    # The model answer, printing with numpy as a candidate may (numpy must be there, in every layout),
    # and importing a module of the standard library that nothing imported before (it must be reachable).
    reference = (ROOT / "reference" / "engine.py").read_text()
    (work / "tmp" / "engine.py").write_text(f"{reference}\n\nimport statistics\n\nimport numpy as np\n\n"
                                            "np.set_printoptions(precision=4)\n")
    grader = ROOT
    if owner:
        # The user's own copy of the grader's modules: the checkout may be beyond its reach.
        grader = work / "tmp" / "grader"
        for package in ("harness", "reference", "specs"):
            shutil.copytree(ROOT / package, grader / package, ignore=shutil.ignore_patterns("__pycache__"))
        subprocess.run(["chown", "-R", f"{owner}:", str(work)], check=True)
        os.chmod(work, 0o700)
    script = _script(BASE.parent, work, grader, owner)
    process = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stems = [*LAYOUTS.items(), *([] if owner else [(STARTED_AS_USER, "as-user"), (BASIC, "basic")])]
    return process, work, stems


def _collect(process: subprocess.Popen, work: Path, stems: list[tuple[str, str]]) -> dict[str, tuple[dict, str]]:
    try:
        _, stderr = process.communicate(timeout=240)
        assert process.returncode == 0, f"the layouts could not be built: {stderr[-2000:]}"
        found = {}
        for layout, stem in stems:
            text = (work / "out" / f"{stem}.json").read_text()
            err = (work / "out" / f"{stem}.err").read_text()
            try:
                found[layout] = (json.loads(text), err)
            except ValueError:
                found[layout] = ({}, f"no JSON report ({text[-300:]!r}); stderr: {err[-2000:]}")
        return found
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        shutil.rmtree(work, ignore_errors=True)


@pytest.fixture(scope="module")
def graded(unprivileged_user):
    """Both identities' layouts, graded at once: {"root": {layout: (report, stderr)}, "user": {...}}."""
    reason = _why_not()
    if reason:
        pytest.skip(reason)
    if bubblewrap_missing():
        pytest.fail(bubblewrap_missing())
    started = {"root": _start(None), "user": _start(unprivileged_user)}
    return {who: _collect(*run) for who, run in started.items()}


def _assert_full_marks(report: dict, stderr: str, isolation: str = "sandbox") -> None:
    assert report, stderr
    assert report["isolation"] == isolation, f"{report.get('isolation_note')}\n{stderr[-2000:]}"
    assert report["status"] == "graded" and report["score"] == report["max_score"] > 0, report.get("message")
    assert "NumPy" not in stderr  # torch warns on every start where numpy is missing


@pytest.mark.parametrize("layout", [*LAYOUTS, STARTED_AS_USER])
def test_the_reference_scores_full_marks_in_the_sandbox_as_root(graded, layout):
    _assert_full_marks(*graded["root"][layout])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_reference_scores_full_marks_in_the_sandbox_as_a_user(graded, layout):
    _assert_full_marks(*graded["user"][layout])


def test_the_reference_scores_full_marks_without_bubblewrap_as_root(graded):
    _assert_full_marks(*graded["root"][BASIC], isolation="basic")
