"""The runtime half of the integrity check: tripwires inside the worker.

They run in the submission's own process, so they can only ever add evidence:
a candidate that shares the address space can find and silence them, and
their silence proves nothing. The static scan (``harness.integrity.scan``) and
the sandbox are the layers that do not depend on the candidate's cooperation.

``Tripwires.install`` runs before the submission is imported and sets:

* a torch-function mode (``AutogradGuard``) around the import and every
  request, and around the whole life of every thread the submission starts;
* a watched autograd engine: ``Variable._execution_engine`` and
  ``torch._C._ImperativeEngine`` both record every backward pass they run;
* saved-tensor hooks in every thread: torch's autograd saves tensors while it
  records a graph (mul, matmul, relu...), however the recording was switched
  on, even with torch-function modes switched off;
* watches on every call that switches one of those three off
  (``harness.sandbox.worker.switches``): the switch is a violation at the line
  that made it, even when it is switched back before anyone looks;
* a snapshot of the grader's own modules and torch's, to notice patching.

Every entry into the submission's code (``guarded``) re-asserts the three parts
and every exit checks them again, with torch's own counts of recorded graph
nodes and of backward passes (``harness.sandbox.worker.counters``), which no
Python code can set back: a graph recorded or a pass run while the guard was
off is seen after the fact, whatever was restored. ``Tripwires.after_request``
re-checks after each request: tensors with autograd history left alive (also
behind ``gc.freeze()``), a forward-mode level left open, the engine and guard
still in place, nothing patched, no thread left running. Proof of torch's
autograd becomes a violation; tampering with the grader's objects, frozen
objects and threads become review entries.
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import os
import sys
import threading
from typing import Any, Callable, Final, Iterator

import torch

from harness.sandbox.worker import switches
from harness.sandbox.worker.autograd_guard import (MAX_FINDINGS, UNSEEN_GRAPH, UNWATCHED_BACKWARD, AutogradGuard,
                                                   WatchedEngine, autograd_tensors)
from harness.sandbox.worker.counters import GraphTasks, graph_nodes
from harness.sandbox.worker.formulas import foreign_node
from harness.variants import FOREIGN_FORMULA
from harness.sandbox.worker.patch_snapshot import Snapshot

__all__ = ["Tripwires"]

_MAX_RAN: Final = 2000
_DISABLED: Final = "the submission disabled the grader's guard"
"""How every violation of the guard's liveness starts: its hook, its mode or its watched objects were touched."""


class Tripwires:
    """The worker's runtime checks: installed before the submission runs, re-checked after every request."""

    def __init__(self, submission: str) -> None:
        self.submission = submission
        self._filenames = {submission, os.path.abspath(submission)} if submission else set()
        """How the submission's code objects may name their file: its lines are found on the stack by it."""
        self.violations: list[str] = []
        self.review: list[dict[str, Any]] = []
        self._ledger: list[str] = []
        """A second record of the violations: emptying ``violations`` does not erase them."""
        self._kinds: set[str] = set()
        self._reported = (0, 0)
        self.guard = AutogradGuard(self.flag)
        self._installed = False
        self._tracer: Callable | None = None
        self._ran: set[tuple[str, int]] = set()
        self._ran_new: list[tuple[str, int]] = []

    @property
    def files(self) -> set[str]:
        """How the submission's code objects may name its file."""
        return set(self._filenames)

    # ---- findings ----

    def flag(self, what: str) -> None:
        """Proof of torch's autograd seen at run time, with the submission's line when one is on the stack."""
        if what in self._kinds or len(self._ledger) >= MAX_FINDINGS:
            return  # one entry per kind of evidence, at the first line it was seen
        self.flag_at(what, self.candidate_line())

    def flag_at(self, what: str, line: int | None) -> None:
        """Proof seen at run time, at ``line`` (the submission's, or None)."""
        if what in self._kinds or len(self._ledger) >= MAX_FINDINGS:
            return
        self._kinds.add(what)
        text = f"{what} (line {line})" if line else what
        self._ledger.append(text)
        self.violations.append(text)

    def note(self, construct: str, why: str, line: int | None = None) -> None:
        """A review entry seen at run time."""
        entry = {"line": line, "construct": construct, "why": why}
        if entry not in self.review and len(self.review) < MAX_FINDINGS:
            self.review.append(entry)

    def report(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Put what was found since the last report into ``reply``."""
        seen_v, seen_r = self._reported
        if self.violations != self._ledger:  # emptied or replaced behind our back: after_request says so
            self.violations = list(self._ledger)
        if len(self.review) < seen_r:
            seen_r = 0
        reply["violations"] = self.violations[seen_v:]
        reply["review"] = self.review[seen_r:]
        if self._ran_new:
            reply["ran"] = [list(scope) for scope in self._ran_new[:_MAX_RAN]]
            self._ran_new = []
        self._reported = (len(self.violations), len(self.review))
        return reply

    def candidate_line(self) -> int | None:
        """The line of the submission's innermost frame on the current stack, if any."""
        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code.co_filename in self._filenames:
                return frame.f_lineno
            frame = frame.f_back
        return None

    # ---- installing ----

    def install(self) -> None:
        """Set every tripwire; call once, before the submission is imported."""
        from torch.autograd.variable import Variable

        self._runs = [0]
        self._runs_seen = 0
        self._engine_type = WatchedEngine(self.flag, self._runs)
        self._engine = self._engine_type()
        self._run_backward = self._engine_type.__dict__["run_backward"]
        Variable._execution_engine = self._engine
        torch._C._ImperativeEngine = self._engine_type
        self._engine_slot = switches.engine_property(Variable, self._engine, self._engine_set, self._filenames)
        type(Variable)._execution_engine = self._engine_slot  # every assignment of the engine is seen from now on
        # The grader's own guard goes on and off the stack through the originals: the watches see only others.
        self._push_mode, self._pop_mode = torch._C._push_on_torch_function_stack, torch._C._pop_torch_function_stack
        self._push_hooks = torch._C._autograd._push_saved_tensors_default_hooks
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._packed, _unpacked)
        self._hooks.__enter__()  # for the main thread; every other thread gets its own in _start_thread
        self._start_new_thread = _thread.start_new_thread
        _thread.start_new_thread = _thread.start_new = threading._start_new_thread = self._start_thread
        self._freeze, self._frozen = gc.freeze, False
        gc.freeze = self._freeze_called
        self._enter_dual_level = torch._C._enter_dual_level
        self._watches = switches.install(self._switched, self._filenames, _is_guard, self._is_own_hook)
        self._tasks = GraphTasks(self._engine_type.__base__)
        self.guard.seq = graph_nodes()  # the probe's own node is the grader's
        self._threads = {t.ident for t in threading.enumerate()}
        self._snapshot = Snapshot()
        self._installed = True
        self._guard_state: tuple = ()
        self._guard_state = (type(self.guard), dict(vars(self.guard)), self.violations, self.review, dict(vars(self)))

    @contextlib.contextmanager
    def guarded(self, active: bool = True) -> Iterator[None]:
        """Run candidate code under the autograd guard (``active=False``: timing probes, unguarded).

        Each entry re-asserts the guard's parts; each exit checks them, and torch's count of
        recorded nodes, again: what was switched off and back inside is seen at the latest here.
        """
        if not active:
            yield
            return
        self._push_mode(self.guard)
        self._check_parts()
        try:
            yield
        finally:
            self._leave_mode()
            self._check_parts()
            self._check_graph_nodes()

    def _switched(self, switch: switches.Switch, line: int | None) -> None:
        _FLAG_AT(self, switch.what, line)

    def _engine_set(self, line: int | None) -> None:
        _FLAG_AT(self, f"{_DISABLED}: it replaced the watched autograd engine", line)

    def owns(self, obj: Any) -> bool:
        """Whether ``obj`` is one of the grader's own tensors with autograd history (the backward-pass probe's)."""
        return self._installed and self._tasks.owns(obj)

    def _is_own_hook(self, pack: Any) -> bool:
        return getattr(pack, "__func__", None) is _PACKED and getattr(pack, "__self__", None) is self

    def trace_calls(self) -> None:
        """From now on, record which of the submission's functions run (evidence of use for the scan's findings).

        A global trace function sees every new Python frame (and asks for no line events); it
        is set only for grades whose scan found a violation, and paused for timed runs.
        """
        filenames, ran, new = self._filenames, self._ran, self._ran_new

        def tracer(frame: Any, event: str, arg: Any) -> None:
            code = frame.f_code
            if code.co_filename in filenames:
                scope = (code.co_name, code.co_firstlineno)
                if scope not in ran:
                    ran.add(scope)
                    new.append(scope)

        self._tracer = tracer
        sys.settrace(tracer)
        threading.settrace(tracer)

    @contextlib.contextmanager
    def untraced(self) -> Iterator[None]:
        """Pause the record of which functions run (timed runs measure the engine, not the record)."""
        if self._tracer is None:
            yield
            return
        sys.settrace(None)
        try:
            yield
        finally:
            sys.settrace(self._tracer)

    def _check_tracer(self) -> None:
        if self._tracer is not None and sys.gettrace() is not self._tracer:
            _FLAG(self, f"{_DISABLED}: its record of which functions ran was switched off")
            sys.settrace(self._tracer)

    def _leave_mode(self) -> None:
        """At the end of a guarded block: the guard is still the innermost torch-function mode (then taken off),
        and modes are switched on."""
        depth = torch._C._len_torch_function_stack()
        if depth == 0 or torch._C._get_function_stack_at(depth - 1) is not self.guard:
            _FLAG(self, f"{_DISABLED}: its torch-function mode was removed")
            return
        if not torch._C._is_torch_function_mode_enabled():  # read while the guard is on the stack
            _FLAG(self, f"{_DISABLED}: torch-function modes were left switched off")
        self._pop_mode()

    def _check_parts(self) -> None:
        """The saved-tensor hook on top and enabled, the watched engine in place (each put back when it is not)."""
        self._check_saved_tensor_hook()
        if self._engine_slot.engine is not self._engine or torch._C._ImperativeEngine is not self._engine_type:
            _FLAG(self, f"{_DISABLED}: the watched autograd engine was replaced")
            self._engine_slot.engine, torch._C._ImperativeEngine = self._engine, self._engine_type

    def _check_graph_nodes(self) -> None:
        now = graph_nodes()
        if now != self.guard.seq:
            _FLAG(self, UNSEEN_GRAPH)
            self.guard.seq = now

    def _check_backward_passes(self) -> None:
        ran, watched = self._tasks.since_last(), self._runs[0] - self._runs_seen
        self._runs_seen = self._runs[0]
        if ran > watched:
            _FLAG(self, UNWATCHED_BACKWARD)

    def _freeze_called(self) -> None:
        # Counting frozen objects takes a walk over all of them: watching the call is cheap.
        self._frozen = True
        self.note("gc.freeze()", "froze objects out of the garbage collector's view, where the grader looks "
                                 "for tensors with autograd history; they were unfrozen and looked at",
                  self.candidate_line())
        self._freeze()

    def _packed(self, tensor: torch.Tensor) -> torch.Tensor:
        self.flag("torch's autograd recorded a graph (it saved a tensor for backward)")
        if self.guard.formulas:  # a Function saving a tensor of torch's graph keeps torch's formula for its backward
            try:
                name = foreign_node(_GRAD_FN(tensor))
            except Exception:  # a tensor torch itself cannot read is not evidence
                name = None
            if name is not None:
                self.flag(f"{FOREIGN_FORMULA} ({name})")
        return tensor

    def _start_thread(self, function: Callable, args: tuple, kwargs: dict | None = None) -> int:
        self.note("a thread", "started a thread: torch's autograd is watched there too, and a person should "
                              "read why an engine needs one", self.candidate_line())
        return self._start_new_thread(self._run_watched, (function, args, kwargs or {}))

    def _run_watched(self, function: Callable, args: tuple, kwargs: dict) -> Any:
        guard = AutogradGuard(self.flag)
        with torch.autograd.graph.saved_tensors_hooks(self._packed, _unpacked), guard:
            try:
                return function(*args, **kwargs)
            finally:
                if graph_nodes() != guard.seq:
                    self.flag(UNSEEN_GRAPH)

    def check_held(self) -> None:
        """Mid-request, after the forward pass: tensors with autograd history the submission holds.

        A cheat must keep its tracked tensors between forward and backward, even
        if it drops them before the request ends.
        """
        if self._installed and autograd_tensors(self.owns):
            self.flag("the forward pass left torch tensors with autograd history alive for backward")

    # ---- re-checking after each request ----

    def after_request(self) -> None:
        """Look for what the request left behind, and for tripwires that were switched off."""
        if not self._installed:
            return
        try:
            self._check_tracked_tensors()
            self._check_graph_nodes()
            self._check_backward_passes()
            self._check_dual_level()
            self._check_saved_tensor_hook()
            self._check_tracer()
            self._check_in_place()
            self._check_threads()
        except Exception as exc:  # a check the submission broke is itself worth a look
            self.note("the grader's runtime checks", f"a runtime check failed ({type(exc).__name__}): "
                                                     "the submission changed something it relies on")

    def _check_tracked_tensors(self) -> None:
        if self._frozen:
            gc.unfreeze()
            self._frozen = False
        if autograd_tensors(self.owns):
            self.flag("torch tensors that require grad were left alive by the submission")

    def _check_saved_tensor_hook(self) -> None:
        top = torch._C._autograd._top_saved_tensors_default_hooks(False)
        pack = top[0] if isinstance(top, tuple) and top else None
        if not self._is_own_hook(pack):
            _FLAG(self, f"{_DISABLED}: its saved-tensor hook was removed or covered")
            self._push_hooks(self._packed, _unpacked)
        if not torch._C._autograd._saved_tensors_hooks_is_enabled():
            _FLAG(self, f"{_DISABLED}: saved-tensor hooks were switched off")
            torch._C._autograd._saved_tensors_hooks_enable()

    def _check_dual_level(self) -> None:
        try:
            level = self._enter_dual_level()
        except RuntimeError:
            self.flag("a forward-mode AD level (torch.autograd.forward_ad.dual_level) was left open")
            return
        torch._C._exit_dual_level(level=level)

    def _check_in_place(self) -> None:
        from torch.autograd.variable import Variable

        kind, guard_vars, violations, review, own_vars = self._guard_state
        tampered = []
        if Variable._execution_engine is not self._engine or torch._C._ImperativeEngine is not self._engine_type \
                or type(self._engine) is not self._engine_type \
                or type(Variable).__dict__.get("_execution_engine") is not self._engine_slot \
                or self._engine_type.__dict__.get("run_backward") is not self._run_backward:
            tampered.append("the watched autograd engine was replaced")
        guard_now = vars(self.guard)
        if type(self.guard) is not kind or set(guard_now) != set(guard_vars) or any(
                guard_now[k] is not guard_vars[k] for k in ("_record",) if k in guard_now):
            tampered.append("the grader's autograd guard was changed")
        mine = vars(self)
        if set(mine) != set(own_vars) or any(mine[k] is not own_vars[k] for k in own_vars
                                              if k not in ("violations", "_reported", "_frozen", "_guard_state",
                                                           "_kinds", "_tracer", "_ran_new", "_runs_seen")):
            tampered.append("the grader's runtime checks were changed")
        if self.violations != self._ledger or self.review is not review:
            tampered.append("the grader's record of what it saw was emptied")
        if _thread.start_new_thread != self._start_thread or threading._start_new_thread != self._start_thread:
            tampered.append("the grader's thread watch was removed")
        if gc.freeze != self._freeze_called:
            tampered.append("the grader's watch on gc.freeze was removed")
        for name in self._snapshot.changed():
            tampered.append(f"{name} was replaced")
        if any(getattr(sys.modules.get(name.rpartition(".")[0]), name.rpartition(".")[2], None) is not watch
               for name, watch in self._watches.items()):
            tampered.append("the grader's watch on the calls that switch its guard off was removed")
        for what in tampered[:5]:
            _FLAG(self, f"{_DISABLED}: {what}")

    def _check_threads(self) -> None:
        alive = [t for t in threading.enumerate() if t.ident not in self._threads and t.is_alive()]
        if alive:
            self.note(f"{len(alive)} thread(s) still running",
                      "left threads running after the request, outside what the grader asked for")


_GRAD_FN: Final = torch._C.TensorBase.grad_fn.__get__
_FLAG: Final = Tripwires.flag
"""The class's own ``flag``, kept apart: a submission that shadows ``flag`` on the instance (or the class)
silences what the guard sees, not the report that the guard was touched."""
_FLAG_AT: Final = Tripwires.flag_at
_PACKED: Final = Tripwires._packed
"""The class's own hook, kept apart for the same reason: the module's name ``Tripwires`` may be rebound."""


def _is_guard(mode: Any) -> bool:
    return type(mode) is AutogradGuard


def _unpacked(tensor: torch.Tensor) -> torch.Tensor:
    return tensor
