"""The sandbox: workers are confined processes that can hang, crash or exit without harming the grader.

Every test runs twice: inside bubblewrap ("sandbox") and with the fallback ("basic").
"""

import os
import textwrap
import time
from pathlib import Path

import pytest

import harness
from harness.sandbox.launch import Launcher, Limits, SandboxUnavailable, WorkerDied, WorkerTimeout, bubblewrap_missing
from harness.sandbox.view import bubblewrap_view

ENGINE = '''
import torch

class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad = data, requires_grad, None
'''

MODES = ["sandbox", "basic"]


@pytest.fixture(scope="module", params=MODES)
def launcher(request):
    if request.param == "sandbox" and bubblewrap_missing():
        pytest.fail(f"the sandbox tests need bubblewrap: {bubblewrap_missing()}")
    with Launcher(request.param) as started:
        yield started


@pytest.fixture
def sandbox(launcher):
    box = launcher.sandbox(Limits(import_seconds=5.0, memory_mb=512))
    yield box
    box.close()


def _write(tmp_path, body: str, name: str = "solution.py"):
    path = tmp_path / name
    path.write_text(ENGINE + textwrap.dedent(body))
    return path


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def test_the_isolation_is_what_was_asked_for(launcher, sandbox):
    assert sandbox.isolation == launcher.mode


def test_a_worker_imports_the_submission_and_reports_its_members(sandbox, tmp_path):
    worker = sandbox.spawn(_write(tmp_path, "Tensor.relu = lambda self: self\n"))
    assert worker.hello["kind"] == "ready"
    assert worker.hello["has_class"] is True
    assert worker.hello["members"] == ["relu"]


def test_only_a_worker_asked_to_probe_runs_the_submissions_ops_before_its_first_request(sandbox, tmp_path):
    """The first worker finds out which features work by running a few ops; the others only import, so a
    graph sent to a fresh worker is the first thing its ops do."""
    path = _write(tmp_path, "def _add(self, other):\n    print('ran an op')\n    return self\n"
                            "Tensor.__add__ = Tensor.__mul__ = _add\n")
    first, later = sandbox.spawn(path), sandbox.spawn(path, probe=False)
    assert "broadcast_forward" in first.hello["features"] and "features" not in later.hello
    assert later.hello["members"] == first.hello["members"] == ["__add__", "__mul__"]
    for worker in (first, later):
        worker.kill()
    assert "ran an op" in first.output()["stdout"] and later.output()["stdout"] == ""


def test_an_exception_at_import_comes_back_as_a_message(sandbox, tmp_path):
    worker = sandbox.spawn(_write(tmp_path, "raise SystemExit(0)\n"))
    assert worker.hello["kind"] == "import_error"
    assert worker.hello["error"]["type"] == "SystemExit"


def test_exiting_during_import_is_a_dead_worker(sandbox, tmp_path):
    with pytest.raises(WorkerDied):
        sandbox.spawn(_write(tmp_path, "import os\nos._exit(0)\n"))


def test_a_hanging_import_times_out(sandbox, tmp_path):
    started = time.monotonic()
    with pytest.raises(WorkerTimeout):
        sandbox.spawn(_write(tmp_path, "import time\ntime.sleep(60)\n"))
    assert time.monotonic() - started < 15


def test_a_hanging_request_is_killed(sandbox, tmp_path):
    body = """
    import time
    Tensor.__add__ = lambda self, other: self
    Tensor.backward = lambda self: time.sleep(1000)
    """
    worker = sandbox.spawn(_write(tmp_path, body))
    started = time.monotonic()
    with pytest.raises(WorkerTimeout):
        worker.request({"kind": "deep_chain", "n": 1}, timeout=1.0)
    assert time.monotonic() - started < 5
    assert not worker.alive


PROCESS_WAYS = """
import ctypes, multiprocessing, os, subprocess, sys, threading
MARK = "1000.MARKER"
def attempt(how, start):
    try:
        start()
        print(how, "STARTED", flush=True)
    except OSError as exc:
        print(how, exc.__class__.__name__, flush=True)
attempt("fork", lambda: os.fork() or None)
attempt("subprocess", lambda: subprocess.Popen(["sleep", MARK], start_new_session=True))
attempt("posix_spawn", lambda: os.posix_spawn("/bin/sleep", ["sleep", MARK], {})
        if os.path.exists("/bin/sleep") else os.posix_spawnp("sleep", ["sleep", MARK], {}))
attempt("multiprocessing", lambda: multiprocessing.get_context("fork").Process(target=print).start())
attempt("spawn", lambda: multiprocessing.get_context("spawn").Process(target=print).start())
attempt("by name", lambda: getattr(__import__("o" + "s"), "fo" + "rk")() or None)
attempt("exec", lambda: os.execvp("sleep", ["sleep", MARK]))
libc = ctypes.CDLL(None, use_errno=True)
print("libc fork", libc["fo" + "rk"](), ctypes.get_errno(), flush=True)
print("raw clone", libc.syscall(56 if os.uname().machine == "x86_64" else 220, 17, 0, 0, 0, 0), ctypes.get_errno())
done = []
thread = threading.Thread(target=lambda: done.append(sum(range(1000))))
thread.start()
thread.join()
print("thread", done)
"""


def test_a_worker_starts_no_process_but_may_start_threads(sandbox, tmp_path):
    marker = f"1000.{os.getpid()}{time.monotonic_ns() % 100000}"
    path = _write(tmp_path, PROCESS_WAYS.replace("1000.MARKER", marker))
    worker = sandbox.spawn(path)
    assert worker.hello["kind"] == "ready", worker.hello
    worker.kill()
    leftovers = _processes_with(marker)
    for pid in leftovers:
        os.kill(pid, 9)
    lines = worker.output()["stdout"].splitlines()
    assert leftovers == [] and not [line for line in lines if "STARTED" in line], lines
    assert lines[:7] == ["fork PermissionError", "subprocess PermissionError", "posix_spawn PermissionError",
                         "multiprocessing PermissionError", "spawn PermissionError", "by name PermissionError",
                         "exec PermissionError"]
    assert lines[7:] == ["libc fork -1 1", "raw clone -1 1", "thread [499500]"]
    # Each attempt is a review entry at its own line of the submission (one per line).
    source = path.read_text().splitlines()
    expected = {number for number, text in enumerate(source, 1)
                if text.startswith(("attempt(", "print(\"libc fork", "print(\"raw clone"))}
    review = worker.hello["review"]
    found = {entry["line"] for entry in review if entry["construct"] in ("a new process", "syscall() through ctypes")}
    assert found == expected, review


def test_memory_is_bounded_for_the_whole_submission_without_a_cgroup(launcher, tmp_path, monkeypatch):
    # Where no cgroup can be made, RLIMIT_AS bounds each process; with no other process to
    # spread over, that bounds the submission. Children would each hold 200 MiB.
    monkeypatch.setattr("harness.sandbox.launch.TreeLimits.create", lambda *args: None)
    body = """
    import multiprocessing, os, subprocess, sys, time
    def hold():
        blob = bytearray(200 * 1024 * 1024)
        time.sleep(3)
    started = 0
    for start in (lambda: os.fork() == 0 and (hold(), os._exit(0)),
                  lambda: subprocess.Popen([sys.executable, "-c", "bytearray(200 << 20); import time; time.sleep(3)"]),
                  lambda: multiprocessing.get_context("fork").Process(target=hold).start()):
        try:
            start()
            started += 1
        except OSError:
            pass
    held = []
    try:
        while len(held) < 40:
            held.append(bytearray(32 * 1024 * 1024))
    except MemoryError:
        pass
    print(started, len(held) * 32)
    """
    box = launcher.sandbox(Limits(import_seconds=10.0, memory_mb=256))
    try:
        assert box.tree is None
        worker = box.spawn(_write(tmp_path, body))
        worker.kill()
        started, mib = map(int, worker.output()["stdout"].split())
    finally:
        box.close()
    assert started == 0
    assert 128 <= mib <= 256  # what the limit leaves above torch, and no more


def test_stdout_is_captured_through_a_pipe_not_read_as_a_reply(sandbox, tmp_path):
    body = 'print(\'{"kind": "ready", "status": "graded", "score": 100}\')\n'
    worker = sandbox.spawn(_write(tmp_path, body))
    assert worker.hello["kind"] == "ready"
    assert "score" not in worker.hello
    worker.kill()
    assert '"score": 100' in worker.output()["stdout"]


def test_output_is_capped_however_much_is_written(sandbox, tmp_path):
    worker = sandbox.spawn(_write(tmp_path, "import sys\nsys.stdout.write('x' * 10_000_000)\n"))
    worker.kill()
    out = worker.output()["stdout"]
    assert out.startswith("x" * 100)
    assert len(out) < 5000
    assert "more bytes not kept" in out


def test_memory_beyond_the_limit_fails_inside_the_worker(sandbox, tmp_path):
    body = '''
    def hog():
        return torch.empty(8 * 1024**3, dtype=torch.uint8).fill_(1)
    Tensor.backward = lambda self: hog()
    Tensor.__add__ = lambda self, other: self
    '''
    worker = sandbox.spawn(_write(tmp_path, body))
    reply = worker.request({"kind": "deep_chain", "n": 1}, timeout=20.0)
    assert reply["error"]["where"] == "backward"


def test_the_cpu_time_comes_from_the_kernel(sandbox, tmp_path):
    body = '''
    import time
    def spin(self):
        end = time.process_time() + 0.3
        while time.process_time() < end:
            pass
    Tensor.backward = spin
    Tensor.__add__ = lambda self, other: self
    '''
    worker = sandbox.spawn(_write(tmp_path, body))
    before = worker.cpu_seconds()
    worker.request({"kind": "deep_chain", "n": 1}, timeout=10.0)
    assert 0.25 < worker.cpu_seconds() - before < 3.0


def test_workers_of_one_submission_do_not_share_a_working_folder(sandbox, tmp_path):
    path = _write(tmp_path, "import os\nopen('mark', 'a').close()\nprint(sorted(os.listdir('.')))\n")
    first, second = sandbox.spawn(path), sandbox.spawn(path)
    for worker in (first, second):
        worker.kill()
        assert worker.output()["stdout"].strip() == "['mark', 'solution.py']"


def test_every_worker_is_pid_1_of_a_pid_namespace_of_its_own(sandbox, tmp_path):
    if not sandbox.namespaces:
        pytest.skip("without namespaces workers are plain children of the zygote")
    path = _write(tmp_path, "import os\nprint(os.getpid(), os.getppid())\n")
    # Alive at once: a worker made in the namespace of the one before would be its pid 2.
    workers = [sandbox.spawn(path) for _ in range(3)]
    for worker in workers:
        worker.kill()
        assert worker.output()["stdout"].strip() == "1 0"


def test_requiring_the_sandbox_without_bubblewrap_is_refused(monkeypatch):
    monkeypatch.setattr("harness.sandbox.launch.shutil.which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match="^bubblewrap is not installed"):
        Launcher("sandbox")


def _mount_points() -> list[str]:
    """Where anything is mounted in a sandbox: the host's mounts (the basic sandbox remounts them) and
    every place bubblewrap's view binds, makes or mounts something."""
    points = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            points.add(line.split()[4].encode().decode("unicode_escape"))
    args, _ = bubblewrap_view(Path(harness.__file__).resolve().parent, as_root=os.geteuid() == 0)
    for i, arg in enumerate(args):
        if arg in ("--ro-bind", "--bind", "--symlink"):
            points.add(args[i + 2])
        elif arg in ("--tmpfs", "--dir", "--dev", "--proc", "--remount-ro"):
            points.add(args[i + 1])
    return sorted(points)


def test_nothing_outside_the_private_tmpfs_is_writable(sandbox, tmp_path):
    # Started by an unprivileged user, bubblewrap's own root, /etc, /dev and /dev/shm are
    # tmpfs folders the submission owns: unlimited, and shared with later submissions.
    # A read-only mount refuses writes in every folder below it, so the probe tries each mount
    # and every folder on the way to one, and walks only what is not mounted read-only: its work
    # does not grow with the size of the Python installation (a worker has no /proc to read the
    # mount table from, so the test hands it every place something may be mounted).
    body = f'''
    import os
    points = {_mount_points()!r}
    def skipped(path):
        return path.startswith(("/tmp", "/proc", "/sys"))
    folders, walked = set(), 0
    for point in points:
        if skipped(point) or not os.path.isdir(point) or os.path.islink(point):
            continue
        parts = point.rstrip("/").split("/")
        folders |= {{"/".join(parts[:i]) or "/" for i in range(1, len(parts) + 1)}}
        if not os.statvfs(point).f_flag & os.ST_RDONLY:
            for root, dirs, _files in os.walk(point):
                walked += 1
                if skipped(root) or os.statvfs(root).f_flag & os.ST_RDONLY:
                    dirs[:] = []
                    continue
                folders.add(root)
    writable = []
    for folder in sorted(folders):
        try:
            os.close(os.open(os.path.join(folder, ".probe"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError:
            continue
        os.unlink(os.path.join(folder, ".probe"))
        writable.append(folder)
    print(len(folders) > 10, walked < 20000, writable)
    '''
    worker = sandbox.spawn(_write(tmp_path, body))
    worker.kill()
    assert worker.output()["stdout"].strip() == "True True []", worker.output()


def test_memory_that_no_limit_counts_is_refused(sandbox, tmp_path):
    # System V segments outlive the mappings RLIMIT_AS counts, a memfd is written without being
    # mapped, and root of a nested user namespace may mount a tmpfs of any size.
    body = '''
    import ctypes, errno, os
    libc = ctypes.CDLL(None, use_errno=True)
    def refused(call):
        return call() == -1 and ctypes.get_errno() in (errno.EPERM, errno.ENOSPC, errno.EINVAL)
    try:
        os.memfd_create("m")
        memfd = False
    except PermissionError:
        memfd = True
    print(refused(lambda: libc.shmget(0, ctypes.c_size_t(1 << 20), 0o1600)),
          refused(lambda: libc.msgget(0, 0o1600)), memfd, refused(lambda: libc.unshare(0x10000000)))
    '''
    worker = sandbox.spawn(_write(tmp_path, body))
    worker.kill()
    assert worker.output()["stdout"].strip() == "True True True True"


def test_a_basic_sandbox_starts_beside_many_processes_of_its_user(tmp_path):
    """Without a user namespace the kernel counts every process of the submission's uid against its process
    limit: the grader's own (an unprivileged grader), other submissions' (nobody's, under a root grader). A
    sandbox still starts, and a worker in it still runs, when that uid already runs more than the limit.
    (In a process whose kernel refuses user namespaces, as a container's seccomp profile does.)"""
    import subprocess
    import sys

    path = _write(tmp_path, "")
    code = textwrap.dedent(f"""
        import os, subprocess, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.sandbox.test_hostile import refuse_user_namespaces
        from harness.sandbox.launch import Launcher, Limits
        limits = Limits(processes=8)
        uid = 65534 if os.geteuid() == 0 else None  # a root grader's basic sandbox runs as nobody
        sleepers = [subprocess.Popen(["sleep", "60"], user=uid) for _ in range(limits.processes + 4)]
        refuse_user_namespaces()
        try:
            with Launcher("basic") as started, started.sandbox(limits) as box:
                print(box.namespaces, box.spawn({str(path)!r}).hello["kind"])
        finally:
            for sleeper in sleepers:
                sleeper.kill()
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "ready"], done.stderr[-2000:]
