"""Hostile submissions against the sandbox: nothing they do moves a verdict, touches the host or outlives the grade.

Each file in ``tests/corpus/hostile/`` tries one technique and ``manifest.yaml`` says how it
must grade. A file is graded as ``<name>_m<mark>.py``: the mark (digits unique to one run of
one file) goes into the argv of every process the file starts, and marked processes are the
only ones outside its sandbox it may touch, so a failed defence harms nothing but the test.
For every file the test proves:

- the manifest's status and exit code, and a score no higher than its gradients earn;
- the grade ends within its time limit + 10 s;
- no process survives: none carries the mark, the sandbox's template is back to its own
  processes, and (for the command line, run with the test as a subreaper) nothing was left
  behind to the test;
- no file outside the sandbox changed: a listing (path, size, mtime) of the checkout's code
  and of every folder Python imports from, and the contents of the small files that decide
  what Python and the system run, are the same before and after; a canary folder the file
  links to is intact; the grader holds no more descriptors than before;
- the report is well formed: the JSON has the contract's fields and the source's SHA-256;
  the text report (plain and coloured) has no control or invisible characters but its own
  colours, and encodes as UTF-8; the Markdown keeps candidate text escaped; no secret planted
  in the grader's environment appears, and no "ESCAPED" line (what a file prints when a step
  worked that must not) either.

Files marked ``also`` are graded again with bubblewrap started by an unprivileged user, with
the basic fallback, and with the basic fallback where the kernel refuses user namespaces (a
grader under a seccomp filter, as in a container's default profile).
"""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.grade import GradeOptions, grade
from harness.report.model import OUTCOMES, STATUSES, Report, exit_code
from harness.report.render import render_json, render_markdown, render_text
from harness.sandbox.launch import Launcher, bubblewrap_missing

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus" / "hostile"
MANIFEST = CORPUS / "manifest.yaml"
SPECS = (ROOT / "specs" / "core" / "worked_examples.yaml",)
TIME_LIMIT = 20.0
SLACK = 10.0
"""Seconds a grade may take beyond its time limit."""
CLI_START = 20.0
"""Seconds the command line may take to start (it imports torch) before the grade's own clock starts."""
SECRET = "GRADER_TEST_SECRET"
ENTRY_KEYS = {"file", "technique", "status", "exit_code", "max_score_fraction", "fails", "time_limit", "via", "also",
              "message", "checks_say", "review", "xfail"}
FAILING = ("failed", "error", "timeout")
PLANTED = b"planted by a hostile test"
_MARKS = itertools.count()


def _load_manifest() -> list[dict[str, Any]]:
    entries = yaml.safe_load(MANIFEST.read_text()) or []
    assert entries, f"{MANIFEST} lists no submissions"
    return entries


ENTRIES = _load_manifest()


def _known_hole(entry: dict[str, Any], mode: str) -> str | None:
    """Why ``entry`` is expected to get through in ``mode``: ``xfail`` is a reason for every mode, or one per mode."""
    reason = entry.get("xfail")
    return reason.get(mode) if isinstance(reason, dict) else reason


def _params(mode: str) -> list[Any]:
    chosen = [e for e in ENTRIES if mode == "sandbox" or mode in e.get("also", [])]
    return [pytest.param(e, id=e["file"].removesuffix(".py"),
                         marks=[pytest.mark.xfail(reason=_known_hole(e, mode), strict=True)] if _known_hole(e, mode)
                         else [])
            for e in chosen]


# ---- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def no_bytecode_writes():
    """The grader writes no caches while the listings are compared: any change is the submission's."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    yield
    sys.dont_write_bytecode = before


@pytest.fixture(scope="module")
def secret():
    """A secret in the grader's environment, as CI secrets are: it must never reach a worker or the report."""
    value = f"s3cret-{secrets.token_hex(12)}"
    os.environ[SECRET] = value
    yield value
    os.environ.pop(SECRET, None)


@pytest.fixture(scope="module")
def sandbox_launcher(secret):
    if bubblewrap_missing():
        pytest.fail(f"the hostile tests need bubblewrap: {bubblewrap_missing()}")
    with Launcher("sandbox") as launcher:
        # Started: the template is there before the first grade counts the launcher's processes (on a loaded
        # machine bubblewrap may still be starting it, and the first grade would then count it as a survivor).
        launcher.sandbox().close()
        yield launcher


@pytest.fixture(scope="module")
def unprivileged_launcher(secret, unprivileged_user):
    with Launcher("sandbox", user=unprivileged_user) as launcher:
        launcher.sandbox().close()  # started: its processes are all there before the first grade looks
        yield launcher


@pytest.fixture(scope="module")
def basic_launcher(secret):
    with Launcher("basic") as launcher:
        yield launcher


_WITHOUT_NAMESPACES = """
import json, os, shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, {tests!r})
import test_hostile as t
t.refuse_user_namespaces()
from harness.sandbox.launch import Launcher
from harness.sandbox.cleanup import remove_tree
sys.dont_write_bytecode = True
with Launcher("basic") as launcher:
    for entry in [e for e in t.ENTRIES if e["file"] in sys.argv[1:]]:
        folder = Path(tempfile.mkdtemp(prefix="hostile-"))
        before = set(Path("/tmp").glob("grade-submission-*"))
        run = t._grade(entry, folder, launcher, os.environ[t.SECRET])
        if run.data.get("isolation_note") != "this machine allows no user namespaces":
            run.problems.append(f"graded with namespaces after all: {{run.data.get('isolation_note')!r}}")
        for left in set(Path("/tmp").glob("grade-submission-*")) - before:
            run.problems.append(f"the submission's folder {{left}} is still on the disk")
            remove_tree(str(left))
        print(json.dumps({{"file": entry["file"], "problems": run.problems}}), flush=True)
        shutil.rmtree(folder, ignore_errors=True)
"""


@pytest.fixture(scope="module")
def graded_without_namespaces(secret) -> tuple[dict[str, list[str]], str]:
    """Every ``no_namespaces`` file graded by a grader whose kernel refuses user namespaces: its problems by file."""
    if os.uname().machine not in _NAMESPACE_CALLS:
        pytest.skip(f"no system call table for {os.uname().machine} to refuse user namespaces with")
    if os.geteuid() != 0:
        pytest.skip("without user namespaces an unprivileged grader's submissions run as the grader's own user, "
                    "which nothing keeps from that user's files (the README says so): run as root to test this")
    files = [e["file"] for e in ENTRIES if "no_namespaces" in e.get("also", [])]
    budget = sum(float(e.get("time_limit", TIME_LIMIT)) + SLACK for e in ENTRIES if e["file"] in files) + CLI_START
    done = subprocess.run([sys.executable, "-c", _WITHOUT_NAMESPACES.format(tests=str(Path(__file__).parent)), *files],
                          env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}, cwd="/",
                          capture_output=True, text=True, timeout=budget)
    problems = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            result = json.loads(line)
            problems[result["file"]] = result["problems"]
    return problems, done.stderr


# unshare, clone and clone3 on the architectures the sandbox runs on (the kernel's tables).
_NAMESPACE_CALLS = {"x86_64": (0xC000003E, 272, 56, 435), "aarch64": (0xC00000B7, 97, 220, 435)}


def refuse_user_namespaces() -> None:
    """For this process and its children: no user namespaces, as in a container's default seccomp profile.

    unshare() and clone() with CLONE_NEWUSER fail with EPERM; clone3(), whose flags a filter
    cannot read, fails with ENOSYS, so the C library falls back to clone().
    """
    arch, unshare, clone, clone3 = _NAMESPACE_CALLS[os.uname().machine]
    load, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    program = [(load, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, allow), (load, 0, 0, 0),
               (jeq, 0, 1, clone3), (ret, 0, 0, enosys),
               (jeq, 1, 0, unshare), (jeq, 0, 3, clone),
               (load, 0, 0, 16), (jset, 0, 1, 0x10000000), (ret, 0, 0, eperm),  # args[0] & CLONE_NEWUSER
               (ret, 0, 0, allow)]

    class Filter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Filter))]

    filters = (Filter * len(program))(*[Filter(*instruction) for instruction in program])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) or libc.prctl(22, 2, ctypes.byref(Program(len(program), filters)), 0, 0):
        raise OSError(ctypes.get_errno(), "seccomp")


@pytest.fixture(scope="module", autouse=True)
def whole_installation():
    """Every file Python imports from, listed before the module's first test: compared by the last test."""
    return _installation_listing()


# ---- one graded file ----------------------------------------------------------------------------


@dataclass
class Run:
    """One hostile file graded once, and everything the test found wrong about it."""

    entry: dict[str, Any]
    path: Path
    mark: str
    data: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    """Every rendering: json, and for grades in this process text, colour and markdown."""
    code: int | None = None
    seconds: float = 0.0
    startup: float = 0.0
    """Seconds allowed before the grade's own clock starts: the command line first imports torch."""
    problems: list[str] = field(default_factory=list)

    @property
    def time_limit(self) -> float:
        return float(self.entry.get("time_limit", TIME_LIMIT))


def _prepare(entry: dict[str, Any], tmp_path: Path) -> Run:
    mark = f"{os.getpid()}{next(_MARKS):03d}"
    path = tmp_path / f"{entry['file'].removesuffix('.py')}_m{mark}.py"
    shutil.copyfile(CORPUS / entry["file"], path)
    return Run(entry, path, mark)


def _grade_here(run: Run, launcher: Launcher) -> None:
    options = GradeOptions(level="core", max_examples=10, time_limit=run.time_limit, specs=SPECS, replace_specs=True)
    started = time.monotonic()
    report = grade(run.path, options, launcher)
    run.seconds = time.monotonic() - started
    run.data = report.to_dict()
    if json.dumps(Report.from_dict(run.data).to_dict()) != json.dumps(run.data):
        run.problems.append("its JSON report does not read back the same (Report.from_dict)")
    run.code = exit_code(report)
    run.texts = {"json": render_json(report), "text": render_text(report, False), "colour": render_text(report, True),
                 "markdown": render_markdown(report)}


def _grade_on_the_command_line(run: Run, tmp_path: Path) -> None:
    """``python -m harness.cli`` started by a shell that reports how the grader ended (if it still can)."""
    script = '"$@"; code=$?; echo "grader exit $code" >&2; exit $code'
    command = ["sh", "-c", script, f"grade-parent-{run.mark}", sys.executable, "-m", "harness.cli", str(run.path),
               "--format", "json", "--level", "core", "--max-examples", "10", "--time-limit", f"{run.time_limit:g}",
               *[arg for spec in SPECS for arg in ("--only-specs", str(spec))]]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.monotonic()
    shell = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        out, err = shell.communicate(timeout=run.time_limit + SLACK + CLI_START)
    except subprocess.TimeoutExpired:
        _signal_group(shell.pid, signal.SIGKILL)
        out, err = shell.communicate()
        run.problems.append(f"the command line did not finish within {run.time_limit + SLACK + CLI_START:g} s")
    run.seconds, run.startup = time.monotonic() - started, CLI_START
    run.code = shell.returncode
    if f"grader exit {shell.returncode}".encode() not in err:
        run.problems.append(f"the grader's parent shell did not see the grader end (exit {shell.returncode}): "
                            f"{err.decode(errors='replace')[-500:]!r}")
    try:
        run.data = json.loads(out)
    except ValueError:
        run.problems.append(f"stdout is not one JSON report: {out[:300]!r} ... {out[-300:]!r}")
        return
    run.texts = {"json": out.decode(), "stderr": err.decode(errors="replace")}


def _grade(entry: dict[str, Any], tmp_path: Path, launcher: Launcher, secret: str, *, cli: bool = False) -> Run:
    run = _prepare(entry, tmp_path)
    canary = _make_canary(run.mark)
    before = _host_state()
    tree = _tree(launcher)
    descriptors = _descriptors()
    children = _children()
    try:
        if cli:
            _become_subreaper(True)
            _grade_on_the_command_line(run, tmp_path)
        else:
            _grade_here(run, launcher)
    finally:
        if cli:
            _become_subreaper(False)
        run.problems += _survivors(run.mark, launcher, tree, children)
        changes = _changes(before, _host_state(), run.mark)
        _remove_planted(changes, run.mark)
        run.problems += [f"a file outside the sandbox changed: {change}" for change in changes]
        run.problems += _canary_problems(canary)
    if not cli:
        run.problems += _descriptor_problems(descriptors)
    if run.data:
        run.problems += _verdict_problems(run)
        run.problems += _report_problems(run, secret)
    return run


def _assert_clean(run: Run) -> None:
    assert not run.problems, "\n".join([f"{run.entry['file']} ({run.entry['technique']}):", *run.problems])


# ---- the tests ----------------------------------------------------------------------------------------


def test_the_corpus_has_one_manifest_entry_per_file():
    on_disk = {p.name for p in CORPUS.glob("*.py")}
    listed = [entry["file"] for entry in ENTRIES]
    assert len(on_disk) >= 30
    assert sorted(listed) == sorted(set(listed)), "a file is listed twice"
    assert on_disk == set(listed)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["file"].removesuffix(".py"))
def test_manifest_entry_is_well_formed(entry):
    assert set(entry) <= ENTRY_KEYS, f"unknown keys {sorted(set(entry) - ENTRY_KEYS)}"
    assert entry["technique"]
    assert entry["status"] in STATUSES
    assert entry["exit_code"] in (0, 1, 3, 4)
    assert 0 <= entry["max_score_fraction"] <= 1
    assert set(entry.get("also", [])) <= {"unprivileged", "basic", "no_namespaces"}
    assert entry.get("via", "library") in ("library", "cli")


@pytest.mark.parametrize("entry", _params("sandbox"))
def test_hostile_submission_in_the_sandbox(entry, sandbox_launcher, secret, tmp_path):
    run = _grade(entry, tmp_path, sandbox_launcher, secret, cli=entry.get("via") == "cli")
    if run.data and "isolation" in run.data and run.data["isolation"] != "sandbox":
        run.problems.append(f"graded with isolation {run.data['isolation']!r}, not in the sandbox")
    _assert_clean(run)


@pytest.mark.parametrize("entry", _params("unprivileged"))
def test_hostile_submission_in_a_sandbox_started_unprivileged(entry, unprivileged_launcher, secret, tmp_path):
    run = _grade(entry, tmp_path, unprivileged_launcher, secret)
    if run.data.get("isolation") != "sandbox":
        run.problems.append(f"graded with isolation {run.data.get('isolation')!r}, not in the sandbox")
    _assert_clean(run)


@pytest.mark.parametrize("entry", _params("basic"))
def test_hostile_submission_with_basic_isolation(entry, basic_launcher, secret, tmp_path):
    run = _grade(entry, tmp_path, basic_launcher, secret)
    if run.data.get("isolation") != "basic":
        run.problems.append(f"graded with isolation {run.data.get('isolation')!r}, not the basic fallback")
    _assert_clean(run)


@pytest.mark.parametrize("entry", _params("no_namespaces"))
def test_hostile_submission_with_basic_isolation_and_no_user_namespaces(entry, graded_without_namespaces):
    # As in a container that allows no user namespaces: no pid, mount or network namespace,
    # only the uid, the session, the rlimits and the grader's own clean-up.
    problems, stderr = graded_without_namespaces
    assert entry["file"] in problems, f"the grader in a process without user namespaces stopped: {stderr[-3000:]}"
    assert problems[entry["file"]] == [], "\n".join([f"{entry['file']} ({entry['technique']}):",
                                                     *problems[entry["file"]]])


def test_the_python_installation_is_unchanged_after_the_whole_corpus(whole_installation):
    # Every file, at every depth (the per-file listings stop two folders down): any change
    # is one no single test saw, such as a daemon that waited for its grade to end.
    changes = _changes(whole_installation, _installation_listing(), mark="")
    assert changes == []


# ---- verdicts ---------------------------------------------------------------------------------------------


def _verdict_problems(run: Run) -> list[str]:
    entry, data, found = run.entry, run.data, []
    if data.get("status") != entry["status"]:
        found.append(f"status is {data.get('status')!r}, expected {entry['status']!r} ({data.get('message')!r})")
    if run.code != entry["exit_code"]:
        found.append(f"exit code is {run.code}, expected {entry['exit_code']}")
    score, max_score = data.get("score", 0), data.get("max_score", 0)
    if max_score and score / max_score > entry["max_score_fraction"] + 1e-9:
        found.append(f"score {score}/{max_score} is more than its gradients earn "
                     f"({entry['max_score_fraction']:.0%})")
    owed = sum(c.get("max_points", 0) for c in data.get("checks", []) if c.get("id") in entry.get("fails", []))
    if owed and score > max_score - owed + 1e-6:
        found.append(f"score {score}/{max_score} includes points of checks that must fail ({owed:g})")
    if run.seconds > run.time_limit + SLACK + run.startup:
        found.append(f"the grade took {run.seconds:.1f} s, more than its time limit ({run.time_limit:g} s) + {SLACK:g}"
                     + (f" + {run.startup:g} to start" if run.startup else ""))
    checks = data.get("checks", [])
    outcomes = {c.get("id"): c.get("outcome") for c in checks}
    for check_id in entry.get("fails", []):
        if outcomes.get(check_id) not in FAILING:
            found.append(f"{check_id} is {outcomes.get(check_id)}, expected it to fail")
    if "message" in entry and not re.search(entry["message"], data.get("message", "")):
        found.append(f"the report's message {data.get('message')!r} does not match {entry['message']!r}")
    if "checks_say" in entry:
        for c in checks:
            if c.get("outcome") in FAILING and not re.search(entry["checks_say"], c.get("message", "")):
                found.append(f"{c.get('id')} says {c.get('message', '')[:200]!r}, not {entry['checks_say']!r}")
    if "review" in entry:
        review = data.get("integrity", {}).get("review", [])
        if not any(isinstance(e.get("line"), int) and re.search(entry["review"], f"{e.get('construct')}: {e.get('why')}")
                   for e in review):
            found.append(f"no review entry with a line matches {entry['review']!r}: {review}")
    for c in checks:
        if "internal grader error" in c.get("message", ""):
            found.append(f"{c.get('id')}: the grader blamed itself: {c.get('message', '')[:300]!r}")
    return found


# ---- the report --------------------------------------------------------------------------------------------

_OWN_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def _unsafe_characters(text: str) -> list[str]:
    """Characters a report must never print raw: controls (but newline and tab), format characters, separators."""
    bad = {ch for ch in text if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")}
    return sorted(f"U+{ord(ch):04X}" for ch in bad)


def _report_problems(run: Run, secret: str) -> list[str]:
    data, found = run.data, []
    for key in ("status", "score", "max_score", "levels", "checks", "integrity", "isolation", "source_sha256",
                "candidate_text"):
        if key not in data:
            found.append(f"the JSON report has no {key!r}")
    if data.get("status") not in STATUSES:
        found.append(f"unknown status {data.get('status')!r}")
    if not isinstance(data.get("levels", {}).get("core"), dict):
        found.append("the JSON report has no core level")
    for c in data.get("checks", []):
        missing = [k for k in ("id", "level", "concept", "outcome", "points", "max_points", "message") if k not in c]
        if missing or c.get("outcome") not in OUTCOMES:
            found.append(f"a malformed check: {str(c)[:200]}")
    integrity = data.get("integrity", {})
    if not isinstance(integrity.get("violations"), list) or not isinstance(integrity.get("review"), list):
        found.append("the JSON report's integrity has no violations and review lists")
    if data.get("source_sha256") != hashlib.sha256(run.path.read_bytes()).hexdigest():
        found.append("the report's source_sha256 is not the SHA-256 of the graded file")
    for name, text in run.texts.items():
        if secret in text:
            found.append(f"the grader's secret is in the {name} output")
        if "ESCAPED" in text:
            lines = sorted(set(re.findall(r"ESCAPED [^\"\\\n]*", text)))
            found.append(f"the {name} output says a step worked that must not: {lines[:5]}")
    for name in ("text", "markdown"):
        if name in run.texts:
            unsafe = _unsafe_characters(run.texts[name])
            if unsafe:
                found.append(f"the {name} report shows raw control or invisible characters: {unsafe[:10]}")
    if "colour" in run.texts:
        unsafe = _unsafe_characters(_OWN_COLOURS.sub("", run.texts["colour"]))
        if unsafe:
            found.append(f"the coloured text report shows control characters besides its colours: {unsafe[:10]}")
        try:
            run.texts["colour"].encode("utf-8")
        except UnicodeEncodeError as exc:
            found.append(f"the text report cannot be printed: {exc}")
    if "markdown" in run.texts:
        found += _markdown_problems(run.texts["markdown"])
    return found


# What the corpus writes into exceptions and output to forge Markdown (markdown_injection.py):
# shown escaped, none of it can appear raw, whatever layout the renderer chooses.
_INJECTED_MARKUP = ("<script", "<img", "<!--", "](javascript:", "](http://evil", "<summary>x</summary>")
_INJECTED_LINES = ("## Score 100", "# heading", "| core.properties | passed", "> quote", "- item", "1. item")


def _markdown_problems(markdown: str) -> list[str]:
    """Candidate text in Markdown opens no tag, heading, list or table row, and closes no fence.

    Text inside a fenced code block is literal, and so is markup escaped with a backslash.
    """
    found, fence = [], ""
    for line in markdown.splitlines():
        ticks = re.match(r"\s*(`{3,})", line)
        if fence:
            if ticks and line.strip() == "`" * len(line.strip()) and len(line.strip()) >= len(fence):
                fence = ""
            continue
        if ticks:
            fence = ticks.group(1)
            continue
        found += [f"the Markdown report shows {markup!r} raw: {line[:80]!r}" for markup in _INJECTED_MARKUP
                  if re.search(r"(?<!\\)" + re.escape(markup), line)]
        if line.startswith(_INJECTED_LINES):
            found.append(f"the Markdown report has a line the submission wrote: {line[:80]!r}")
    if fence:
        found.append("the Markdown report leaves a code fence open")
    return found


# ---- processes ----------------------------------------------------------------------------------------------


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _describe(pid: int) -> str:
    return repr(_cmdline(pid).replace(b"\0", b" ")[:120])


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _marked(mark: str) -> list[int]:
    return [pid for pid in _pids() if pid != os.getpid() and mark.encode() in _cmdline(pid)]


def _descendants(root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid in _pids():
        children.setdefault(_parent(pid) or 0, []).append(pid)
    found, frontier = set(), [root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.add(child)
            frontier.append(child)
    return found


def _tree(launcher: Launcher) -> set[int]:
    """The launcher's own processes (bubblewrap and the template): what must be left after a grade."""
    return _descendants(launcher._process.pid)


def _children() -> set[int]:
    return {pid for pid in _pids() if _parent(pid) == os.getpid()}


def _exits_soon(pid: int, seconds: float = 5.0) -> bool:
    """Whether a child of the test, already killed and tearing down (its command line gone), is reaped within
    ``seconds``: a process the grader killed may still be exiting when the test looks."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            return True
        if _cmdline(pid):
            return False  # still running its program: a survivor, not a process on its way out
        time.sleep(0.05)
    return False


def _become_subreaper(on: bool) -> None:
    # Orphans of the command line's tree are then the test's children, wherever they hid.
    ctypes.CDLL(None).prctl(36, int(on), 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def _signal_group(pid: int, sig: int) -> None:
    try:
        group = os.getpgid(pid)
        if group != os.getpgid(0):
            os.killpg(group, sig)
    except OSError:
        pass


def _kill(pid: int) -> None:
    for sig in (signal.SIGCONT, signal.SIGKILL):
        _signal_group(pid, sig)
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _survivors(mark: str, launcher: Launcher, tree: set[int], children: set[int]) -> list[str]:
    """What outlived the grade, killed (the test's own processes, found by the mark) and described."""
    found = []
    # The template kills a submission's workers on the grader's order; on a loaded machine (the suite runs in
    # two processes) that order may take seconds to be carried out. A process still there after this is a leak.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (_marked(mark) or _tree(launcher) - tree):
        time.sleep(0.05)
    for _ in range(20):  # a process that re-forks needs a few rounds
        leftovers = _marked(mark)
        if not leftovers:
            break
        for pid in leftovers:
            found.append(f"pid {pid} survived the grade: {_describe(pid)}")
            _kill(pid)
        time.sleep(0.05)
    for pid in _tree(launcher) - tree:
        found.append(f"pid {pid} is still in the sandbox's tree: {_describe(pid)}")
    for pid in _children() - children:
        if not _is_zombie(pid) and not _exits_soon(pid):  # a dead (or dying) orphan of the clean-up is no survivor
            found.append(f"pid {pid} was left to the test: {_describe(pid)}")
            _kill(pid)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass
    return sorted(set(found))


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def _descriptor_problems(before: int) -> list[str]:
    deadline = time.monotonic() + 2
    while _descriptors() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    after = _descriptors()
    return [f"the grader holds {after - before} more file descriptors than before"] if after > before else []


# ---- files outside the sandbox ---------------------------------------------------------------------------


def _python_folders() -> list[Path]:
    """Every folder the grader imports from, but the test folders of this checkout."""
    folders = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    folders.update(site.getsitepackages())
    folders.add(site.getusersitepackages())
    folders.update(p for p in sys.path if p)
    tests = str(ROOT / "tests")
    return sorted(Path(p) for p in folders if os.path.isdir(p) and not p.startswith(tests))


def _listing(top: Path, depth: int | None) -> dict[str, Any]:
    """(size, mtime, mode) of every entry under ``top``, ``depth`` folders down at most."""
    found: dict[str, Any] = {}
    stack = [(str(top), 1)]
    while stack:
        folder, level = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found[entry.path] = (st.st_size, st.st_mtime_ns, st.st_mode)
            if entry.is_dir(follow_symlinks=False) and (depth is None or level < depth):
                stack.append((entry.path, level + 1))
    return found


SENSITIVE = ("/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf", "/etc/ld.so.preload",
             "/etc/ld.so.conf", str(ROOT / "pyproject.toml"))


def _host_state() -> dict[str, Any]:
    """The checkout's code in full, two levels of every import folder, and the contents of what Python runs first."""
    state: dict[str, Any] = {}
    for top in ("harness", "reference", "candidate_template", "specs"):
        state.update(_listing(ROOT / top, None))
    state.update(_listing(ROOT, 1))
    folders = _python_folders()
    for folder in folders:
        state.update(_listing(folder, 2))
    small = list(SENSITIVE)
    for folder in folders:
        small += [str(folder / name) for name in ("sitecustomize.py", "usercustomize.py")]
        small += [str(p) for p in folder.glob("*.pth")]
    for path in small:
        try:
            state["content:" + path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            state["content:" + path] = None
    return state


def _installation_listing() -> dict[str, Any]:
    listing: dict[str, Any] = {}
    for folder in _python_folders():
        if not str(folder).startswith(str(ROOT)):
            listing.update(_listing(folder, None))
    return listing


def _changes(before: dict[str, Any], after: dict[str, Any], mark: str) -> list[str]:
    found = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        # Other programs on the machine may add bytecode caches at any time; a submission's
        # would carry its mark, and overwriting an existing cache still counts.
        if "__pycache__" in path and (not mark or mark not in path) and (
                old is None or os.path.basename(path) == "__pycache__"):
            continue
        what = "created" if old is None else "removed" if new is None else "changed"
        found.append(f"{path.removeprefix('content:')} {what}")
    return found


def _remove_planted(changes: list[str], mark: str) -> None:
    """Undo what a failed defence let a file plant: only files it marked or filled with its marker text."""
    for change in changes:
        path, _, what = change.rpartition(" ")
        if what != "created" or not os.path.lexists(path):
            continue
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                if mark in path or any(PLANTED in p.read_bytes() for p in Path(path).glob("*.py")):
                    shutil.rmtree(path)
            elif mark in path or PLANTED in Path(path).read_bytes()[:4096]:
                os.unlink(path)
        except OSError:
            pass


def _make_canary(mark: str) -> Path:
    canary = Path(f"/tmp/grader-hostile-canary-{mark}")
    canary.mkdir(mode=0o755)
    (canary / "keep.txt").write_text(mark)
    return canary


def _canary_problems(canary: Path) -> list[str]:
    try:
        intact = (canary / "keep.txt").read_text() == canary.name.rpartition("-")[2]
    except OSError:
        intact = False
    shutil.rmtree(canary, ignore_errors=True)
    return [] if intact else [f"the canary folder {canary} was changed"]
