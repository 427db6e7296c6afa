"""What a check works with: a worker running the submission, and the oracle.

A check asks the ``Context`` to run a program or a probe on the candidate's
engine and gets back an ``Observation`` (``observation.py``) of plain values.
Verdicts (the comparisons with torch) are made here, in the grader's process;
which outcome a check's ending means is ``run.py``'s.

Each check judges only its own concept (``judge``'s ``parts``): the gradients
of leaves that torch gives a gradient, unless the check is about None-ness or
dtypes. Conventions the contract fixes are charged once, by
``core.conventions``, and compared past everywhere else: a ``(1,)`` result
where torch gives 0-d, float32 storage (float32 tolerance), and a one-element
output of shape ``(1, 1)`` (``expect`` backpropagates from its sum instead).
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from harness.compare import (DEFAULT_TOLERANCE, Mismatch, Tolerance, as_zero_d, compare, dtype_mismatch, looser,
                             tolerance_for)
from harness.checks.observation import Observation, decoded, describe_error
from harness.integrity.evidence import from_reply, functions_run
from harness.program import Outcome, Program, Step
from harness.sandbox.launch import Sandbox, Worker, WorkerDied, WorkerTimeout
from harness.report.safety import one_line

__all__ = ["Context", "Observation", "Evidence", "Failed", "CandidateError", "CandidateTimeout", "NotAttempted",
           "DEFAULT_PARTS", "judge", "scalar_root"]

DEFAULT_PARTS = ("error", "values", "grads")
"""What a check compares unless it says otherwise: errors, step values and the gradients torch computes."""


class CheckEnded(Exception):
    """Ends a check with a message for the candidate and ``details`` that explain it.

    ``evidence`` is what the grader itself needs later (the diagnosis replays it):
    the failing ``Program``, the candidate's ``Observation`` and torch's ``Outcome``.
    It never goes into a rendered report.
    """

    def __init__(self, message: str, *, reason: str = "", **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        """A stable code of what went wrong (``CheckResult.reason``), where the message is prose."""
        self.details = details
        self.evidence: Evidence | None = None

    def with_evidence(self, evidence: Evidence) -> CheckEnded:
        self.evidence = evidence
        return self


@dataclass(frozen=True)
class Evidence:
    """A failing run, kept as objects for the grader: never rendered, never sent anywhere."""

    program: Program
    observation: Observation | None
    expected: Outcome | None
    hung: bool = False
    """The run gave no answer in time (a check that reports its hang as an error says so here)."""


class Failed(CheckEnded):
    """The candidate's engine gave a wrong answer."""


class CandidateError(CheckEnded):
    """The candidate's code raised, or its process died."""


class CandidateTimeout(CheckEnded):
    """The candidate's code did not answer in time, and its process was killed."""


class NotAttempted(CheckEnded):
    """The check does not apply: the candidate has nothing it could test."""


class Shared:
    """What every lane of one grade shares: violations, output, and the time budgets."""

    TIMEOUT_BUDGET = 30.0
    """Seconds of timed-out requests after which the remaining checks are skipped."""

    def __init__(self, deadline: float, *, trace_calls: bool = False) -> None:
        self.deadline = deadline
        self.violations: list[str] = []
        self.review: list[Any] = []
        """Integrity review entries seen at run time (``harness.integrity.ReviewEntry``)."""
        self._output: dict[str, str] = {"stdout": "", "stderr": ""}
        self._retired: list[Worker] = []
        self.timeouts = 0
        self.timeout_seconds = 0.0
        self.lock = threading.Lock()
        self.busy: set[Worker] = set()
        """Workers answering a request right now: stopped when the timeout budget runs out."""
        self.trace_calls = trace_calls
        """When the scan found a violation: every worker records which of the submission's functions run."""
        self.ran: set[tuple[str, int]] = set()
        """The submission's functions that ran, as ``(name, first line)``: evidence of use for the scan."""
        self.features_known = False
        """Whether a worker's hello has told which features work: later workers skip the forward passes that
        find out (they run the submission's ops: a fresh worker runs its first graph first, and sooner)."""

    def why_skip(self) -> str | None:
        if time.perf_counter() > self.deadline:
            return "the submission's time limit ran out"
        if self.timeout_seconds >= self.TIMEOUT_BUDGET:
            return (f"the submission timed out {self.timeouts} times ({self.timeout_seconds:.0f} s in all); "
                    "the remaining checks were not run")
        return None

    def add_violations(self, found: Sequence[str]) -> None:
        with self.lock:
            self.violations.extend(v for v in found if v not in self.violations)

    def add_review(self, found: Sequence[Any]) -> None:
        with self.lock:
            self.review.extend(e for e in found if e not in self.review)

    def add_output(self, streams: dict[str, str]) -> None:
        with self.lock:
            for stream, text in streams.items():
                if text and len(self._output[stream]) < 8000:
                    self._output[stream] += text

    def retired(self, worker: Worker) -> None:
        """A worker that was stopped: its output is read with ``output``, in the order workers were retired.

        A killed worker's pipes close only once the kernel has torn its whole process down;
        the lane starts its next check meanwhile instead of waiting for them.
        """
        with self.lock:
            self._retired.append(worker)

    @property
    def output(self) -> dict[str, str]:
        """What the submission printed, every worker retired so far included."""
        with self.lock:
            pending, self._retired = self._retired, []
        for worker in pending:
            self.add_output(worker.output())
        return self._output

    @contextlib.contextmanager
    def running(self, worker: Worker) -> Iterator[None]:
        """Mark ``worker`` as answering a request while the block runs: add_timeout may stop it."""
        with self.lock:
            self.busy.add(worker)
        try:
            yield
        finally:
            with self.lock:
                self.busy.discard(worker)

    def add_timeout(self, seconds: float) -> None:
        """Count a timed-out request; the one that spends the budget stops every request still running.

        The other lane may be waiting out a long probe of the same endless loop (a deep chain
        waits 30 s): its answer could no longer change the grade's course, only delay it.
        """
        with self.lock:
            was_spent = self.timeout_seconds >= self.TIMEOUT_BUDGET
            self.timeouts += 1
            self.timeout_seconds += seconds
            stop = [] if was_spent or self.timeout_seconds < self.TIMEOUT_BUDGET else list(self.busy)
        for worker in stop:
            # The zygote kills it; its lane's receive then ends, there (closing the socket here
            # would pull it from under the thread that is reading it).
            worker.sandbox.kill_worker(worker.number)


class Context:
    """One submission in one sandbox. Checks call ``run``/``probe``; workers are forked as needed."""

    def __init__(self, sandbox: Sandbox, path: Path, class_name: str, module_name: str, shared: Shared, *,
                 seed: int = 0, max_examples: int = 200, variant: str = "tensor",
                 members: frozenset[str] = frozenset()) -> None:
        self.sandbox = sandbox
        self.path = path
        self.class_name = class_name
        self.module_name = module_name
        self.shared = shared
        self.seed = seed
        self.max_examples = max_examples
        """Hypothesis examples for the core property check (the others draw a share of it)."""
        self.variant = variant
        """``function``: the worker also checks that every backward formula is the submission's own."""
        self.members = frozenset(members)
        """What the submission's class has (its first worker's hello): the checks ask for no more."""
        self._worker: Worker | None = None
        self._isolated = True
        self.check_deadline = float("inf")
        self.notes: dict[str, Any] = {}
        """Details a passing check leaves for the report (a table, say); cleared when a check begins."""

    # ---- worker lifecycle: a fresh worker per check keeps checks independent ----

    def begin(self, check_deadline: float = float("inf"), fresh: bool = True) -> None:
        """Start a check with its own deadline; ``fresh`` gives it a new worker, so no state leaks into it."""
        if fresh or self._isolated:
            self.retire()
        self._isolated = fresh
        self.check_deadline = check_deadline
        self.notes = {}

    def note(self, **details: Any) -> None:
        """Add details to the running check's result, whatever its outcome."""
        self.notes.update(details)

    def retire(self) -> None:
        if self._worker is not None:
            self._worker.kill()
            self.shared.retired(self._worker)
            self._worker = None

    def worker(self) -> Worker:
        if self._worker is None or not self._worker.alive:
            if self._worker is not None:
                self.shared.retired(self._worker)
            try:
                self._worker = self.sandbox.spawn(self.path, self.class_name, probe=not self.shared.features_known)
            except WorkerTimeout as exc:
                raise CandidateTimeout(str(exc)) from None
            except WorkerDied as exc:
                raise CandidateError(str(exc)) from None
            hello = self._worker.hello
            self._add_evidence(hello)
            if "features" in hello:
                self.shared.features_known = True
            if hello.get("kind") == "import_error":
                raise CandidateError(f"importing the submission raised {describe_error(hello['error'])}")
            if self.shared.trace_calls:
                try:
                    self._add_evidence(self._worker.request({"kind": "trace_calls"}, 5.0))
                except (WorkerTimeout, WorkerDied) as exc:
                    raise CandidateError(f"starting the record of which functions run: {exc}") from None
        return self._worker

    def request(self, payload: dict[str, Any], timeout: float, what: str) -> dict[str, Any]:
        remaining = self.check_deadline - time.perf_counter()
        if remaining <= 0:
            raise CandidateTimeout(f"{what}: the check's time limit ran out")
        spent = self.shared.why_skip()
        if spent:
            raise CandidateTimeout(f"{what}: not run, {spent}")
        timeout = min(timeout, remaining)
        worker = self.worker()
        try:
            with self.shared.running(worker):
                reply = worker.request(payload, timeout)
        except WorkerTimeout:
            # A long probe (a deep chain) counts like a short one, so one slow
            # engine does not lose every check after it.
            self.shared.add_timeout(min(timeout, 10.0))
            raise CandidateTimeout(f"{what}: no answer within {timeout:g} s (the process was killed)") from None
        except WorkerDied as exc:
            spent = self.shared.why_skip()
            if spent:  # stopped by add_timeout, not by the submission
                raise CandidateTimeout(f"{what}: stopped unfinished, {spent}") from None
            raise CandidateError(f"{what}: {exc}") from None
        self._add_evidence(reply)
        return reply

    def _add_evidence(self, reply: dict[str, Any]) -> None:
        """Integrity evidence in a worker's message: it can only add violations and review entries."""
        violations, review = from_reply(reply)
        self.shared.add_violations(violations)
        self.shared.add_review(review)
        ran = functions_run(reply)
        if ran:
            with self.shared.lock:
                self.shared.ran |= ran

    # ---- programs ----

    def run(self, program: Program, *, timeout: float = 10.0, observe: str = "all", guard: bool = True,
            timed: bool = False, ballast: int = 0) -> Observation:
        """Run ``program`` on the candidate's engine. ``timed`` measures the worker's CPU time from outside
        (the kernel's count, never a number the worker reports) with its garbage collector paused. ``ballast``: objects
        the worker allocates first, which move the addresses the graph's objects get."""
        what = f"running {program.expression()[:80]}" if len(program.steps) <= 20 else \
            f"running a graph of {len(program.steps)} nodes"
        payload = {"kind": "timed_run" if timed else "run", "program": program.to_wire(), "observe": observe,
                   "guard": guard, **self._variant(), **({"ballast": ballast} if ballast else {})}
        started = time.perf_counter()
        worker = self.worker() if timed else None
        cpu_before = worker.cpu_seconds() if worker is not None else None
        reply = self.request(payload, timeout, what)
        cpu = worker.cpu_seconds() - cpu_before if worker is not None and cpu_before is not None else None
        return decoded(program, reply, time.perf_counter() - started, cpu)

    def run_many(self, programs: Sequence[Program], *, timeout: float) -> list[Observation]:
        """Run ``programs`` in one request (each on fresh leaves): one observation per program, in order."""
        payload = {"kind": "run_many", "programs": [p.to_wire() for p in programs], "observe": "all", "guard": True,
                   **self._variant()}
        started = time.perf_counter()
        reply = self.request(payload, timeout, f"running {len(programs)} graphs")
        results = reply.get("results", [])
        if len(results) != len(programs):
            raise CandidateError(f"the worker answered {len(results)} of {len(programs)} graphs")
        seconds = (time.perf_counter() - started) / max(1, len(programs))
        return [decoded(p, r, seconds, None) for p, r in zip(programs, results)]

    def _variant(self) -> dict[str, str]:
        return {} if self.variant == "tensor" else {"variant": self.variant}

    def probe(self, kind: str, *, timeout: float, **fields: Any) -> dict[str, Any]:
        return self.request({"kind": kind, **fields}, timeout, f"the {kind.replace('_', ' ')} probe")

    def expect(self, program: Program, *, parts: Sequence[str] = DEFAULT_PARTS,
               tolerance: Tolerance | None = None, timeout: float = 10.0, hint: str | None = None,
               expected: Outcome | None = None) -> Observation:
        """Run ``program`` on the candidate and raise Failed/CandidateError unless it matches torch in ``parts``.

        A one-element output that is not 0-d is backpropagated from its sum: the root
        gradient's shape is ``core.conventions``'s concern, not this check's.
        """
        expected = expected or program.run_torch()
        rooted = scalar_root(program, expected)
        if rooted is not program:
            if self.members and "sum" not in self.members:
                # The appended .sum() is the grader's call, never the candidate's bug.
                raise NotAttempted(f"the grader sums this one-element output, and {self.class_name} has no sum",
                                   reason="sum")
            program, expected = rooted, rooted.run_torch()
        observation = self.run(program, timeout=timeout)
        mismatch = judge(program, observation, expected, parts, tolerance)
        if mismatch is not None:
            raise_for(program, mismatch, self.path, self.class_name, hint, expected, observation)
        return observation


def scalar_root(program: Program, expected: Outcome) -> Program:
    """``program`` with a ``.sum()`` appended when its output holds one element but is not 0-d.

    Torch backpropagates from any one-element output; an engine that only accepts 0-d
    ones (or seeds a 0-d gradient) is charged for it once, by ``core.conventions``.
    """
    out = expected.values.get(program.output)
    if program.upstream is not None or out is None or out.dim() == 0:
        return program
    taken = {leaf.name for leaf in program.leaves} | {step.name for step in program.steps}
    name = f"{program.output}_sum"
    while name in taken:
        name += "_"
    return replace(program, steps=(*program.steps, Step(name, "sum", (program.output,))), output=name)


@dataclass(frozen=True)
class Verdict:
    kind: str  # "error" or "mismatch"
    message: str
    mismatch: Mismatch | None = None


def judge(program: Program, obs: Observation, expected: Outcome, parts: Sequence[str],
          tolerance: Tolerance | None = None) -> Verdict | None:
    """The first way the observation differs from torch's outcome in ``parts``, or None.

    ``parts``: ``error``; ``values`` (every step's value); ``requires_grad`` (every
    result's flag); ``grads`` (the gradients torch computes: leaves that require grad
    and reach the output); ``grad_types`` (only their None-ness and shapes);
    ``none`` (every leaf's gradient is None exactly where torch's is); ``dtypes``
    (a gradient has its tensor's dtype). Leaves torch leaves None are judged by
    ``none`` alone: whether they read None or zeros is the requires_grad concept's.
    """
    if obs.error is not None:
        return Verdict("error", describe_error(obs.error))
    tol_for = _tolerances(program, tolerance)
    if "values" in parts:
        for step in program.steps:
            if step.name not in obs.values:
                continue
            got = obs.values[step.name]
            # a type name from the worker: shown on one line, whatever it holds
            if isinstance(got, dict):
                kind = one_line(str(got.get("not_tensor")))
                return Verdict("mismatch", f"{step.name}.data is not a torch tensor ({kind})")
            if obs.subclass("values", step.name):
                kind = one_line(str(obs.subclass("values", step.name)))
                return Verdict("mismatch", f"{step.name}.data is a {kind}, expected a plain torch.Tensor")
            want = expected.values[step.name]
            m = compare(as_zero_d(got, want), want, tol_for(obs.dtype("values", step.name)), f"value of {step.name}")
            if m is not None:
                return Verdict("mismatch", m.message, m)
    if "requires_grad" in parts:
        for step in program.steps:
            if step.name in obs.requires_grad and obs.requires_grad[step.name] != expected.requires_grad[step.name]:
                inputs = ", ".join(a for a in step.args if isinstance(a, str))
                return Verdict("mismatch",
                               f"{step.name}.requires_grad is {obs.requires_grad[step.name]!r}, expected "
                               f"{expected.requires_grad[step.name]!r}: a result requires grad exactly when one of "
                               f"its inputs ({inputs}) does")
    for leaf in program.leaves:
        if leaf.raw:
            continue
        want = expected.grads[leaf.name]
        if want is None and "none" not in parts:
            continue
        got = obs.grads.get(leaf.name)
        if isinstance(got, dict):
            kind = one_line(str(got.get("not_tensor")))
            return Verdict("mismatch", f"{leaf.name}.grad is a {kind}, expected a torch.Tensor")
        if obs.subclass("grads", leaf.name):
            kind = one_line(str(obs.subclass("grads", leaf.name)))
            return Verdict("mismatch", f"{leaf.name}.grad is a {kind}, expected a plain torch.Tensor")
        if "none" in parts and (got is None) != (want is None):
            m = compare(got, want, DEFAULT_TOLERANCE, f"{leaf.name}.grad")
            return Verdict("mismatch", m.message, m)
        if want is None:
            continue
        got = as_zero_d(got, want)
        if "grads" in parts or "grad_types" in parts:
            loose = Tolerance(float("inf"), float("inf"))
            m = compare(got, want, tol_for(obs.dtype("grads", leaf.name)) if "grads" in parts else loose,
                        f"{leaf.name}.grad")
            if m is not None and ("grads" in parts or m.kind in ("none", "shape")):
                return Verdict("mismatch", m.message, m)
        if "dtypes" in parts and got is not None:
            grad_dtype, data_dtype = obs.dtype("grads", leaf.name), obs.dtype("leaf_data", leaf.name)
            # Only a gradient that loses values fails here (integers for float data); another float
            # dtype is a convention, noted once by core.conventions.
            lossy = grad_dtype and data_dtype and not _is_float(grad_dtype) and _is_float(data_dtype)
            m = dtype_mismatch(grad_dtype, data_dtype, f"{leaf.name}.grad") if lossy else None
            if m is not None:
                return Verdict("mismatch", m.message, m)
    return None


def _is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat", "complex"))


def _tolerances(program: Program, override: Tolerance | None):
    """Tolerance for a value of a given dtype: the program's, loosened to float32's for float32 results.

    Storing float64 inputs as float32 is a convention deviation, charged by ``core.conventions`` only.
    """
    float32 = any(leaf.value.dtype == torch.float32 for leaf in program.leaves if not leaf.raw)
    transcendental = any(step.spec.transcendental for step in program.steps)
    base = override or (tolerance_for(torch.float32, transcendental) if float32 else DEFAULT_TOLERANCE)
    single = looser(base, tolerance_for(torch.float32, transcendental))

    def pick(dtype: str | None) -> Tolerance:
        return single if dtype == "float32" else base

    return pick


def raise_for(program: Program, verdict: Verdict, submission: Path, class_name: str, hint: str | None,
              expected: Outcome | None = None, observation: Observation | None = None) -> None:
    from harness.checks.snippets import reproduce

    details: dict[str, Any] = {"graph": program.expression(),
                               "snippet": reproduce(program, submission, class_name, expected, observation)}
    if hint:
        details["hint"] = hint
    if verdict.mismatch is not None:
        details["worst"] = verdict.mismatch.to_dict()
    evidence = Evidence(program, observation, expected)
    if verdict.kind == "error":
        raise CandidateError(verdict.message, **details).with_evidence(evidence)
    raise Failed(verdict.message, **details).with_evidence(evidence)
