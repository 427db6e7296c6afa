"""Grading a batch on a Dask distributed cluster (``grade batch --scheduler ADDRESS``).

Each submission is one task. The task carries the submission's source and the
rubric and spec files the batch uses, so a worker needs no shared folder: only
the grader installed at the same version, and bubblewrap (the task refuses to
grade without it unless the batch allows basic isolation). On the worker the
task grades exactly as ``grade batch`` does on one machine, in a fresh sandbox.
"""

from __future__ import annotations

import atexit
import dataclasses
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from harness import __version__
from harness.batch.collect import CollectedSubmission
from harness.batch.grading import Graded, grade_one, not_graded, read_source
from harness.errors import HarnessError
from harness.grade import GradeOptions
from harness.report.model import Report

__all__ = ["DaskPool", "grade_task", "close_worker_sandboxes"]

_SPEC_SUFFIXES = (".yaml", ".yml")
CONNECT_SECONDS = 10.0
"""How long to keep trying to reach the scheduler before giving up."""


class DaskPool:
    """Sends each submission to a Dask cluster as one task; yields the results as they come back."""

    def __init__(self, address: str, options: GradeOptions, *, allow_basic_isolation: bool = False) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise HarnessError("--scheduler needs Dask: pip install 'autograd-grader[dask]'") from None
        try:
            self.client = Client(address, timeout=CONNECT_SECONDS)
        except (OSError, TimeoutError, ValueError) as exc:
            raise HarnessError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
        self.options = options
        self.allow_basic = allow_basic_isolation
        self.files = _pack_settings(options)

    def results(self, submissions: Sequence[CollectedSubmission]) -> Iterator[Graded]:
        from distributed import as_completed

        fields = {f.name: getattr(self.options, f.name) for f in dataclasses.fields(self.options)
                  if f.name not in ("specs", "rubric")}
        by_key = {}
        futures = []
        for sub in submissions:
            source = read_source(sub.path) if not sub.problem else None
            if sub.path is not None and not sub.problem and source is None:
                sub = dataclasses.replace(sub, problem="cannot read the submission: not a regular file under the "
                                                       "size cap")
            future = self.client.submit(
                grade_task, sub.id, sub.origin, str(sub.path) if sub.path else "", source, sub.problem, fields,
                self.files, __version__, self.allow_basic, pure=False, key=f"grade-{sub.id}-{time.time_ns()}",
            )
            by_key[future.key] = sub
            futures.append(future)
        try:
            for future in as_completed(futures):
                sub = by_key[future.key]
                if future.status == "finished":
                    yield future.result()
                else:  # the task itself failed (its worker died, say): the row says so
                    reason = future.exception() if future.status == "error" else future.status
                    report = not_graded(sub, self.options, f"the Dask task failed: {reason}", time.perf_counter())
                    yield Graded.of(sub.id, report)
        finally:
            self.client.cancel(futures)

    def ready(self) -> None:
        """Each task checks its own worker; nothing to check from here."""

    def close(self) -> None:
        self.client.close()


def _pack_settings(options: GradeOptions) -> dict[str, Any]:
    """The rubric's text and the spec files' bytes (by root and relative path), for tasks to rebuild."""
    specs = []
    for root in options.specs:
        root = Path(root)
        if root.is_dir():
            files = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
                     if p.is_file() and p.suffix in _SPEC_SUFFIXES}
        else:
            files = {root.name: root.read_bytes()}
        specs.append({"dir": root.is_dir(), "files": files})
    rubric = Path(options.rubric).read_bytes() if options.rubric else None
    return {"specs": specs, "rubric": rubric}


def grade_task(sid: str, origin: str, path: str, source: bytes | None, problem: str, fields: dict[str, Any],
               files: dict[str, Any], version: str, allow_basic: bool) -> Graded:
    """What runs on a Dask worker: rebuild the submission and settings in a temp folder, grade, clean up.

    ``path`` is where the submission lies on the batch's machine: the report names it
    (the snippets import the submission from there), never the worker's temp folder.
    """
    from harness.sandbox.launch import bubblewrap_missing

    scratch = Path(tempfile.mkdtemp(prefix="grade-task-"))
    try:
        options = _rebuild_options(fields, files, scratch)
        sub_path = None
        if source is not None:
            sub_path = scratch / "submission" / Path(path).name
            sub_path.parent.mkdir()
            sub_path.write_bytes(source)
        sub = CollectedSubmission(sid, sub_path, origin, problem)
        refusal = ""
        if version != __version__:
            refusal = f"the Dask worker runs grader {__version__}, the batch {version}: install the same version"
        elif not allow_basic and (missing := bubblewrap_missing()):
            refusal = f"the Dask worker cannot sandbox the submission: {missing}"
        if refusal:
            sub = dataclasses.replace(sub, problem=refusal)
            return grade_one(sub, options, lambda: None)
        graded = grade_one(sub, options, _worker_sandboxes(options).new)
        if sub_path is not None:
            graded = _moved(graded, str(sub_path.parent), str(Path(path).parent))
        return graded
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _moved(graded: Graded, here: str, there: str) -> Graded:
    """The result with every mention of the worker's folder replaced by the submission's folder on the
    batch's machine (as a Python string literal first, as snippets write it, then as plain text)."""
    def move(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(repr(here), repr(there)).replace(here, there)
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        if isinstance(value, list):
            return [move(v) for v in value]
        return value

    return Graded(graded.id, Report.from_dict(move(graded.report.to_dict())), move(graded.markdown))


_SOURCES: dict[tuple[str, int], Any] = {}
_SOURCES_LOCK = threading.Lock()


def _worker_sandboxes(options: GradeOptions) -> Any:
    """This worker's sandbox template for these limits, started by its first task and kept for the next:
    torch is imported once per worker, and each submission still gets a fresh sandbox of its own."""
    from harness.batch.pools import SandboxSource

    key = (options.isolation, options.memory_mb)
    with _SOURCES_LOCK:
        if key not in _SOURCES:
            _SOURCES[key] = SandboxSource(options)
            atexit.register(_SOURCES[key].close)
        return _SOURCES[key]


def close_worker_sandboxes() -> None:
    """Stop this process's sandbox templates (the end of a worker, or of an in-process cluster)."""
    with _SOURCES_LOCK:
        for source in _SOURCES.values():
            source.close()
        _SOURCES.clear()


def _rebuild_options(fields: dict[str, Any], files: dict[str, Any], scratch: Path) -> GradeOptions:
    specs = []
    for i, root in enumerate(files["specs"]):
        base = scratch / "specs" / str(i)
        for rel, data in root["files"].items():
            target = base / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        specs.append(base if root["dir"] else base / next(iter(root["files"])))
    rubric = None
    if files["rubric"] is not None:
        rubric = scratch / "rubric.yaml"
        rubric.write_bytes(files["rubric"])
    return GradeOptions(**fields, specs=tuple(specs), rubric=rubric)
