"""Where a batch's grading happens: on this machine (threads), or on a Dask cluster (``harness.batch.remote``).

A pool's ``results(submissions)`` yields each ``Graded`` as it finishes. Closing
the generator (an interrupted batch) cancels what has not started and kills the
sandboxes of what is running; their half-done grades are dropped. ``ready()``
fails early when grading cannot work at all; ``close()`` ends the pool.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Iterator, Sequence

from harness.batch.collect import CollectedSubmission
from harness.batch.grading import Graded, grade_one
from harness.grade import GradeOptions, sandbox_limits
from harness.sandbox.launch import Launcher, Sandbox

__all__ = ["LocalPool", "SandboxSource"]


class SandboxSource:
    """Where each submission's sandbox comes from: a fresh one per submission, never reused.

    One ``Launcher`` (a trusted template process that has imported torch) forks each
    submission's sandbox, so torch is imported once per batch, not once per submission.
    """

    def __init__(self, options: GradeOptions) -> None:
        self.limits = sandbox_limits(options)
        self.launcher = Launcher(options.isolation, many=True)

    def new(self) -> Sandbox:
        return self.launcher.sandbox(self.limits)

    def close(self) -> None:
        self.launcher.close()


class LocalPool:
    """Grades ``jobs`` submissions at a time in threads of this process.

    Threads, not processes: a grade spends most of its time waiting on its sandbox's
    processes (the grader's own CPU, the oracle and the judging, was about 0.15 s per
    core-level submission when measured); the grader imports torch once; and an
    interrupt reaches one process, which closes every running sandbox.
    """

    def __init__(self, options: GradeOptions, jobs: int) -> None:
        self.options = options
        self.jobs = max(1, jobs)
        self.sandboxes = SandboxSource(options)  # starts the template now: it imports torch while we go on

    def ready(self) -> None:
        """Open and close one sandbox: raises SandboxUnavailable when the sandbox cannot start here."""
        self.sandboxes.new().close()

    def close(self) -> None:
        self.sandboxes.close()

    def results(self, submissions: Sequence[CollectedSubmission]) -> Iterator[Graded]:
        stopping = threading.Event()
        lock = threading.Lock()
        live: dict[int, Sandbox] = {}

        def work(sub: CollectedSubmission) -> Graded | None:
            if stopping.is_set():
                return None
            key = threading.get_ident()

            def track(sandbox: Sandbox | None) -> None:
                with lock:
                    if sandbox is None:
                        live.pop(key, None)
                    elif stopping.is_set():
                        sandbox.close()
                    else:
                        live[key] = sandbox

            return grade_one(sub, self.options, self.sandboxes.new, track)

        pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="grade")
        pending = {pool.submit(work, sub) for sub in submissions}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    graded = future.result()
                    if graded is not None:
                        yield graded
        finally:
            stopping.set()
            for future in pending:
                future.cancel()
            with lock:
                for sandbox in live.values():
                    sandbox.close()
            pool.shutdown(wait=True, cancel_futures=True)
