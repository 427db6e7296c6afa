"""The grader's side of the sandbox: the thread that drains every worker's output."""

import os
import threading
import time

from harness.sandbox.cleanup import remove_tree
from harness.sandbox.drain import OUTPUT_CAP, Drain


def test_output_is_kept_up_to_the_cap_and_the_rest_counted():
    drain = Drain()
    try:
        r, w = os.pipe()
        drain.add("worker", "stdout", r)
        os.write(w, b"x" * (OUTPUT_CAP + 10))
        os.close(w)
        text = drain.text("worker", "stdout", wait=5)
        assert text == "x" * OUTPUT_CAP + "\n[... 10 more bytes not kept ...]"
    finally:
        drain.close()


def test_a_pipe_forgotten_while_its_output_waits_does_not_stop_the_drain():
    # The drain thread has seen output on a pipe and waits for the lock while the pipe is
    # forgotten (closed): it must skip the stale event, not die, or every later worker
    # blocks on a full pipe.
    drain = Drain()
    try:
        pipes = [os.pipe() for _ in range(40)]  # all open at once: no number is reused in between
        for key, (r, _) in enumerate(pipes):
            drain.add(key, "stdout", r)
        for key, (_, w) in enumerate(pipes):
            with drain._lock:
                os.write(w, b"output")
                time.sleep(0.02)  # the drain thread's select() returns and waits for the lock
            drain.forget(key)
            os.close(w)
        r, w = os.pipe()
        drain.add("after", "stdout", r)
        os.write(w, b"still drained")
        os.close(w)
        assert drain.text("after", "stdout", wait=5) == "still drained"
        assert drain._thread.is_alive()
    finally:
        drain.close()


def _nest(top, depth: int) -> None:
    """``depth`` folders inside each other under ``top``, with a file at the bottom (paths past PATH_MAX)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("dd", dir_fd=fd)
        inner = os.open("dd", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    os.close(fd)


def test_a_submissions_folder_is_removed_however_deep_and_locked(tmp_path):
    top = tmp_path / "workroot"
    top.mkdir()
    _nest(top, 3000)
    (top / "locked").mkdir()
    (top / "locked" / "file").write_text("x")
    (top / "locked").chmod(0)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "keep").write_text("x")
    (top / "link").symlink_to(tmp_path / "outside")
    remove_tree(str(top))
    assert not top.exists()
    assert (tmp_path / "outside" / "keep").read_text() == "x"


def test_waiting_for_a_stream_ends_when_its_writer_closes_it_not_on_a_poll():
    # A killed worker's output is read once its pipes close; the reader wakes at the close.
    drain = Drain()
    try:
        r, w = os.pipe()
        drain.add("worker", "stdout", r)
        os.write(w, b"last words")
        closer = threading.Timer(0.05, os.close, (w,))
        started = time.monotonic()
        closer.start()
        assert drain.text("worker", "stdout", wait=5) == "last words"
        assert time.monotonic() - started < 2  # the close, not the five seconds
        r2, w2 = os.pipe()
        drain.add("open", "stdout", r2)
        os.write(w2, b"partial")
        started = time.monotonic()
        assert drain.text("open", "stdout", wait=0.2) == "partial"  # a writer that stays: the wait runs out
        assert time.monotonic() - started >= 0.2
        os.close(w2)
    finally:
        drain.close()
