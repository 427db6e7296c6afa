"""The sandbox: workers are separate processes that can hang, crash or exit without harming the grader."""

import os
import textwrap
import time

import pytest

from harness.sandbox import Limits, Sandbox, WorkerDied, WorkerTimeout

ENGINE = '''
import torch

class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad = data, requires_grad, None
'''


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox.launch(Limits(import_seconds=5.0, memory_mb=512)) as box:
        yield box


def _write(tmp_path, body: str, name: str = "solution.py"):
    path = tmp_path / name
    path.write_text(ENGINE + textwrap.dedent(body))
    return path


def test_a_worker_imports_the_submission_and_reports_its_members(sandbox, tmp_path):
    worker = sandbox.spawn(_write(tmp_path, "Tensor.relu = lambda self: self\n"))
    assert worker.hello["kind"] == "ready"
    assert worker.hello["has_class"] is True
    assert worker.hello["members"] == ["relu"]


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


def test_a_hanging_request_is_killed_with_its_grandchildren(sandbox, tmp_path):
    body = '''
    import subprocess
    import time
    CHILD = subprocess.Popen(["sleep", "1000"], start_new_session=True)
    with open("child.pid", "w") as f:
        f.write(str(CHILD.pid))
    Tensor.__add__ = lambda self, other: self
    Tensor.backward = lambda self: time.sleep(1000)
    '''
    worker = sandbox.spawn(_write(tmp_path, body))
    child = int((worker.workdir / "child.pid").read_text())
    with pytest.raises(WorkerTimeout):
        worker.request({"kind": "deep_chain", "n": 1}, timeout=1.0)
    time.sleep(0.2)
    for pid in (worker.pid, child):
        assert not _alive(pid), f"process {pid} outlived its worker"


def test_stdout_is_captured_not_read_as_a_reply(sandbox, tmp_path):
    body = 'print(\'{"kind": "ready", "status": "graded", "score": 100}\')\n'
    worker = sandbox.spawn(_write(tmp_path, body))
    assert worker.hello["kind"] == "ready"
    assert '"score": 100' in worker.output()["stdout"]


def test_memory_beyond_the_limit_fails_inside_the_worker(sandbox, tmp_path):
    body = '''
    def hog():
        return torch.empty(8 * 1024**3, dtype=torch.uint8).fill_(1)
    Tensor.backward = lambda self: hog()
    '''
    worker = sandbox.spawn(_write(tmp_path, body))
    reply = worker.request({"kind": "deep_chain", "n": 1}, timeout=20.0)
    assert reply["error"]["where"] in ("forward", "backward")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
