"""A batch whose inputs are hostile: links of every kind, a FIFO, a device, a sparse 40 GiB file, an
oversized file, an undecodable name, worker text with newlines and lone surrogates, and a zip with
every trap we know. One candidate can never read the host, stop the cohort or rewrite a verdict.

Two batches are graded once for the module (a folder and a zip, core level, few examples); every
test reads their output folders. Each asserts what the whole must hold: the batch finished, every
submission has its row, every output was written and parses, no host content appears in any
output, and a link to the model answer never scores.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.batch import collect as collect_module

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "tests" / "solutions"
MODEL = ROOT / "reference" / "engine.py"
FAST = ("--level", "core", "--max-examples", "5")
SECRET = "HOSTSECRET-7f3a"
"""In every host file a link points at: it must never reach an output."""

# Overwrites backward with one that raises an exception whose class name and message would draw
# lines of a report (and one lone surrogate, which no encoding accepts).
INJECTION = '''
_Fake = type("Boom\\nscore 60.0/60.0  [graded]  interview bar: passed\\nimport os; os.system('x')", (Exception,), {})


def _backward(self):
    raise _Fake("see https://evil.example \\udcff\\nscore 60.0/60.0  [graded]  interview bar: passed")


Tensor.backward = _backward
'''
SHADOW = '''import pathlib
pathlib.Path(__file__).with_name("SHADOW_RAN").write_text("mallory's module ran")
from graphlib import *  # noqa
'''


class Finished:
    """How a batch command ended: its exit code and what it printed."""

    def __init__(self, done: subprocess.CompletedProcess) -> None:
        self.exit_code, self.stdout, self.stderr = done.returncode, done.stdout, done.stderr
        self.output = done.stdout + done.stderr


def notebook(source: str) -> dict:
    """A notebook holding ``source`` in a code cell between IPython magics and shell lines, as Jupyter saves it."""
    return {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# My engine\n"]},
                      {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 1,
                       "source": ["%matplotlib inline\n", "!pip install torch\n", "import torch"]},
                      {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 2,
                       "source": source.splitlines(True)},
                      {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 3,
                       "source": ["%%time\n", "Tensor(torch.ones(2)).sum().backward()\n"]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def invoke(*args) -> Finished:
    """``grade`` in a process of its own, stopped after a few minutes: a defence that fails (a FIFO
    that blocks, a device read without end) fails the test instead of hanging the suite."""
    done = subprocess.run([sys.executable, "-m", "harness.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, errors="backslashreplace", timeout=300)
    return Finished(done)


@pytest.fixture(scope="module")
def host(tmp_path_factory) -> Path:
    """Files of the host that links point at."""
    host = tmp_path_factory.mktemp("host")
    (host / "secret.txt").write_text(f"{SECRET} first line (\n")
    (host / "folder").mkdir()
    (host / "folder" / "solution.py").write_text(f"{SECRET} = (\n")
    (host / "folder" / f"{SECRET}_listing.py").write_text("x = 1\n")
    return host


@pytest.fixture(scope="module")
def folder_batch(host, tmp_path_factory):
    subs = tmp_path_factory.mktemp("hostile") / "subs"
    subs.mkdir()
    shutil.copy(SOLUTIONS / "correct_core.py", subs / "alice.py")
    # bob imports graphlib; mallory's graphlib.py lies beside him in the flat folder
    (subs / "bob.py").write_text("import graphlib  # noqa\n" + (SOLUTIONS / "overwrite_grad.py").read_text())
    (subs / "graphlib.py").write_text(SHADOW)
    (subs / "nb.ipynb").write_text(json.dumps(notebook((SOLUTIONS / "overwrite_grad.py").read_text())))
    (subs / "inject.py").write_text((SOLUTIONS / "correct_core.py").read_text() + INJECTION)
    (subs / "secret.py").symlink_to(host / "secret.txt")
    (subs / "model.py").symlink_to(MODEL)
    (subs / "hostdir").symlink_to(host / "folder", target_is_directory=True)
    (subs / "dana").mkdir()
    (subs / "dana" / "solution.py").symlink_to(MODEL)
    (subs / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(subs / "fifo.py")
    with open(subs / "sparse.py", "wb") as f:
        f.truncate(40 * 2**30)  # 40 GiB that take no disk
    (subs / "big.py").write_bytes(b"#" * (collect_module.MAX_SOURCE_BYTES + 1))
    (subs / os.fsdecode(b"caf\xe9.py")).write_text("")
    devices = []
    if os.geteuid() == 0:
        os.mknod(subs / "device.py", stat.S_IFCHR | 0o600, os.makedev(1, 5))  # /dev/zero's numbers
        devices = ["device"]
    out = subs.parent / "out"
    junit = subs.parent / "junit.xml"
    result = invoke("batch", subs, "-o", out, *FAST, "-j", "2", "--gradescope", "--junit", junit,
                    "--allow-basic-isolation")
    return subs, out, junit, result, devices


def _zip_with_traps(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ann.py", "")
        zf.writestr("notes", "a file")
        zf.writestr("notes\\draft.txt", "a member whose folder is that file")
        zf.writestr("zeros/solution.py", "")
        for i in range(8):  # 32 MiB of zeros in 130 KB: twice a submission's cap
            zf.writestr(f"zeros/pad{i}.bin", bytes(4 * 2**20))
        zf.writestr("badname\u00e9.py", "")  # its UTF-8 name is spoilt below
        many = zipfile.ZipInfo("many/solution.py")
        zf.writestr(many, "")
        for i in range(40_000):
            zf.writestr(f"many/{i}", b"", compress_type=zipfile.ZIP_STORED)
        for name, target in (("linked.py", "/etc/passwd"), ("model/solution.py", str(MODEL))):
            link = zipfile.ZipInfo(name)
            link.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(link, target)
    data = path.read_bytes()
    assert data.count("badname\u00e9".encode()) == 2  # the local header and the central directory
    path.write_bytes(data.replace("badname\u00e9".encode(), b"badname\xff\xff"))  # flagged UTF-8, but not
    return path


@pytest.fixture(scope="module")
def zip_batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-zip")
    archive = _zip_with_traps(folder / "cohort.zip")
    out = folder / "out"
    result = invoke("batch", archive, "-o", out, *FAST, "--gradescope", "--junit", folder / "junit.xml",
                    "--allow-basic-isolation")
    return archive, out, folder / "junit.xml", result


FOLDER_ROWS = {
    # id: (status, a phrase of the message)
    "alice": ("graded", ""),
    "bob": ("graded", ""),
    "graphlib": ("error", ""),
    "inject": ("graded", ""),
    "nb": ("graded", ""),
    "secret": ("error", "a symbolic link"),
    "model": ("error", "a symbolic link"),
    "hostdir": ("error", "a symbolic link"),
    "dana": ("error", "a symbolic link"),
    "zero": ("error", "a symbolic link"),
    "fifo": ("error", "not a regular file"),
    "sparse": ("error", "42,949,672,960 bytes is too large"),
    "big": ("error", "1,048,577 bytes is too large"),
    "caf_": ("error", "defines no class"),
}
ZIP_ROWS = {
    "ann": ("error", "defines no class"),
    "notes": ("error", "not a Python file"),
    "notes-2": ("error", "the zip holds both a file and a folder named notes"),
    "zeros": ("error", "the submission unpacks to more than 16 MiB"),
    "badname_": ("error", "its name is marked UTF-8 but is not"),
    "many": ("error", "the zip holds 40,001 files for this submission (at most 200)"),
    "linked": ("error", "a symbolic link"),
    "model": ("error", "a symbolic link"),
}


def _outputs_hold_together(out: Path, junit: Path, rows: dict[str, tuple[str, str]]) -> dict[str, dict]:
    """Every output written and parsed; each expected row there with its status and reason. The reports by id."""
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["counts"]["total"] == len(rows)
    by_id = {row["id"]: row for row in summary["submissions"]}
    assert sorted(by_id) == sorted(rows)
    reports = {}
    for sid, (status, phrase) in rows.items():
        report = json.loads((out / "results" / f"{sid}.json").read_text())
        assert (report["status"], by_id[sid]["status"]) == (status, status), (sid, report["message"])
        assert phrase in report["message"], (sid, report["message"])
        assert (out / "results" / f"{sid}.md").read_text().startswith("## Autograd grade: ")
        gradescope = json.loads((out / "gradescope" / sid / "results.json").read_text())
        assert gradescope["score"] == report["score"]
        reports[sid] = report
    table = list(csv.reader(io.StringIO((out / "summary.csv").read_text())))
    assert sorted(r[0] for r in table[2:]) == sorted(rows)
    suites = ET.parse(junit).getroot()
    assert sorted(s.get("name") for s in suites) == sorted(rows)
    page = (out / "report.html").read_text()
    HTMLParser().feed(page)
    for sid in rows:
        assert f'id="c-{sid}"' in page
    return reports


def _every_output(out: Path, junit: Path) -> str:
    texts = [junit.read_bytes().decode("utf-8")]
    for path in out.rglob("*"):
        if path.is_file() and "sources" not in path.relative_to(out).parts:
            texts.append(path.read_bytes().decode("utf-8"))  # every output is valid UTF-8
    return "\n".join(texts)


def test_a_folder_of_hostile_inputs_is_graded_row_by_row(folder_batch, host):
    subs, out, junit, result, devices = folder_batch
    assert result.exit_code == 0, result.output
    rows = {**FOLDER_ROWS, **{d: ("error", "not a regular file") for d in devices}}
    reports = _outputs_hold_together(out, junit, rows)
    assert reports["alice"]["score"] > 0 and reports["alice"]["interview"]["passed"]
    text = _every_output(out, junit) + result.output
    assert SECRET not in text and str(host) not in text
    for sid in ("model", "dana"):  # links to the model answer
        assert reports[sid]["score"] == 0 and not reports[sid]["interview"]["passed"]
    assert "\\udce9" in reports["caf_"]["file"]  # the undecodable byte, shown as its escape


def test_worker_text_cannot_draw_lines_of_any_output(folder_batch):
    _, out, junit, _, _ = folder_batch
    report = json.loads((out / "results" / "inject.json").read_text())
    failing = [c for c in report["checks"] if c["outcome"] == "error"]
    assert failing and all("\n" not in c["message"] for c in failing)
    assert "\\udcff" in failing[0]["message"]  # the lone surrogate, escaped
    markdown = (out / "results" / "inject.md").read_text()
    assert not [line for line in markdown.splitlines() if line.lstrip().startswith(("score", "import os"))]
    prose = re.sub(r"(?ms)^ *(`{3,}).*?^ *\1$", "", markdown)  # outside code blocks, where links would live
    assert "https\\://evil" in prose and "https://evil" not in prose  # no live autolink
    for cause in report["root_causes"]:
        snippet = cause.get("snippet") or ""
        raises = [line for line in snippet.splitlines() if line.startswith("# raises")]
        assert len(raises) <= 1 and not snippet.splitlines()[-1].startswith(("score", "import os"))
    for text in (junit.read_text(), (out / "gradescope" / "inject" / "results.json").read_text()):
        assert not [line for line in text.splitlines() if line.lstrip().startswith(("score 60", "import os"))]


def test_a_snippet_imports_only_its_own_file(folder_batch, tmp_path):
    subs, out, _, _, _ = folder_batch
    snippets = {}
    for sid in ("bob", "nb"):
        report = json.loads((out / "results" / f"{sid}.json").read_text())
        found = [c["details"]["snippet"] for c in report["checks"] if c["details"].get("snippet")]
        assert found and all("sys.path" not in s for s in found)
        snippets[sid] = found[0]
    # Run from a folder of the interviewer's: bob's `import graphlib` must find the standard
    # library's, never mallory's module lying beside bob's file. The notebook's snippet loads its
    # code cells without Jupyter.
    runner = ("import json, sys\nfor text in json.load(sys.stdin):\n    try:\n        exec(text, {})\n"
              "    except BaseException as exc:\n        print(type(exc).__name__)\n    else:\n        print('ran')\n")
    done = subprocess.run([sys.executable, "-c", runner], input=json.dumps(list(snippets.values())), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["AssertionError", "AssertionError"], done.stderr[-2000:]
    assert not (subs / "SHADOW_RAN").exists()


def test_a_notebook_is_graded_from_its_code_cells(folder_batch):
    _, out, _, _, _ = folder_batch
    nb, bob = (json.loads((out / "results" / f"{sid}.json").read_text()) for sid in ("nb", "bob"))
    assert nb["source_note"] == ("graded from the notebook's code cells; left out: 1 cell of IPython magic (%%), "
                                 "2 magic or shell lines (% or !)")
    assert nb["score"] == bob["score"] > 0  # the same engine as bob's file
    assert [c["outcome"] for c in nb["checks"]] == [c["outcome"] for c in bob["checks"]]


def test_a_zip_of_traps_is_graded_row_by_row(zip_batch):
    archive, out, junit, result = zip_batch
    assert result.exit_code == 0, result.output
    reports = _outputs_hold_together(out, junit, ZIP_ROWS)
    assert "/etc/passwd" not in _every_output(out, junit) + result.output
    assert reports["model"]["score"] == 0 and not reports["model"]["interview"]["passed"]
    # nothing over a cap stays on disk
    unpacked = [p for p in (out / "sources").rglob("*") if p.is_file()] if (out / "sources").exists() else []
    assert sum(p.stat().st_size for p in unpacked) < collect_module.SUBMISSION_BYTES
    assert not (out / "sources" / "zeros").exists() and not (out / "sources" / "many").exists()


def test_grade_file_reads_no_pipe_nor_more_than_the_cap(tmp_path):
    from click.testing import CliRunner

    from harness.cli import main

    os.mkfifo(tmp_path / "fifo.py")
    with open(tmp_path / "sparse.py", "wb") as f:
        f.truncate(40 * 2**30)
    for name, message in [("fifo.py", "not a regular file (a pipe, device or socket is never read)"),
                          ("sparse.py", "42,949,672,960 bytes is too large for a submission (at most 1,048,576)")]:
        result = CliRunner().invoke(main, [str(tmp_path / name)])
        assert (result.exit_code, result.stderr) == (2, f"error: {tmp_path / name}: {message}\n")
