"""The grader's side of the sandbox: the thread that drains every worker's output."""

import os
import time

from harness.sandbox.launch import OUTPUT_CAP, _Drain


def test_output_is_kept_up_to_the_cap_and_the_rest_counted():
    drain = _Drain()
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
    drain = _Drain()
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
