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
* a snapshot of the grader's own modules and torch's, to notice patching.

``Tripwires.after_request`` re-checks after each request: tensors with
autograd history left alive (also behind ``gc.freeze()``), a forward-mode
level left open, the engine and guard still in place, nothing patched, no
thread left running. Proof of torch's autograd becomes a violation; tampering
with the grader's objects, frozen objects and threads become review entries.
"""

from __future__ import annotations

import _thread
import contextlib
import gc
import itertools
import os
import sys
import threading
import types
from typing import Any, Callable, Final, Iterator

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["AutogradGuard", "Tripwires", "WatchedEngine", "autograd_tensors", "carries_autograd"]

_AUTOGRAD_ENTRY_POINTS: Final = {
    "backward": "torch's Tensor.backward",
    "grad": "torch.autograd.grad",
    "requires_grad_": "Tensor.requires_grad_",
    "retain_grad": "Tensor.retain_grad",
    "register_hook": "Tensor.register_hook",
    "register_post_accumulate_grad_hook": "Tensor.register_post_accumulate_grad_hook",
    "vjp": "torch.autograd.functional.vjp",
    "jvp": "torch.autograd.functional.jvp",
    "jacobian": "torch.autograd.functional.jacobian",
    "hessian": "torch.autograd.functional.hessian",
    "_make_dual": "forward-mode AD (make_dual)",
    "make_dual": "forward-mode AD (make_dual)",
}
_MAX_FINDINGS: Final = 20
_MAX_RAN: Final = 2000
_DISABLED: Final = "the submission disabled the grader's guard"
"""How every violation of the guard's liveness starts: its hook, its mode or its watched objects were touched."""
_REQUIRES_GRAD = torch._C.TensorBase.requires_grad.__get__
_GRAD_FN = torch._C.TensorBase.grad_fn.__get__
_TensorBase = torch._C.TensorBase
_COMPRESS, _REPEAT, _MAP = itertools.compress, itertools.repeat, map
"""Bound before the submission runs: replacing ``itertools.compress`` later cannot hide a tensor."""
_PLAIN: set = set()
"""Torch functions seen and known not to be an entry into torch's autograd: the guard's fast path."""
_MAX_PLAIN: Final = 5000


def carries_autograd(value: Any) -> bool:
    """Whether a torch tensor requires grad or has autograd history, read past any subclass's properties."""
    if not isinstance(value, _TensorBase):
        return False
    try:
        return bool(_REQUIRES_GRAD(value)) or _GRAD_FN(value) is not None
    except Exception:  # a tensor torch itself cannot read is not evidence
        return False


def autograd_tensors() -> int:
    """How many live torch tensors require grad or carry autograd history."""
    objects = gc.get_objects()
    # The same isinstance test carries_autograd starts with, run by map at C speed: a large
    # graph is hundreds of thousands of objects, of which few are torch tensors.
    tensors = _COMPRESS(objects, _MAP(isinstance, objects, _REPEAT(_TensorBase)))
    return sum(1 for obj in tensors if carries_autograd(obj))


class AutogradGuard(TorchFunctionMode):
    """Records every use of torch's own autograd while candidate code runs in this thread.

    It also counts torch calls and the elements they produce while ``counting``
    is set: the backward-cost probe compares those counts across input sizes.
    """

    def __init__(self, record: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.violations: list[str] = []
        self._record = record
        self.counting = False
        self.calls = 0
        self.elements = 0
        self.complex = False
        """Whether a counted call returned a complex tensor."""

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func not in _PLAIN:
            self._inspect_call(func, args, kwargs or {})
        result = func(*args, **kwargs) if kwargs else func(*args)
        if isinstance(result, _TensorBase):
            try:
                tracked = _REQUIRES_GRAD(result) or _GRAD_FN(result) is not None
            except Exception:  # a tensor torch itself cannot read is not evidence
                tracked = False
            if tracked:
                self.flag(f"{getattr(func, '__qualname__', getattr(func, '__name__', ''))} returned a torch tensor "
                          "that requires grad")
            if self.counting:
                self.calls += 1
                self.elements += result.numel()
                self.complex = self.complex or result.is_complex()
        elif self.counting:
            self.calls += 1
        return result

    def _inspect_call(self, func: Callable, args: tuple, kwargs: dict) -> None:
        """Flag a call into torch's autograd; remember functions that never are one (most of them)."""
        name = getattr(func, "__name__", "")
        owner = getattr(getattr(func, "__self__", None), "__name__", "")
        if name in _AUTOGRAD_ENTRY_POINTS:
            if not (name == "requires_grad_" and (args[1:2] == (False,) or kwargs.get("requires_grad") is False)):
                self.flag(f"called {_AUTOGRAD_ENTRY_POINTS[name]}")
        elif name == "__set__" and owner == "requires_grad":
            if len(args) > 1 and bool(args[1]):
                self.flag("set requires_grad=True on a torch tensor")
        elif len(_PLAIN) < _MAX_PLAIN:
            try:
                _PLAIN.add(func)
            except TypeError:  # unhashable: judged again at every call
                pass

    def flag(self, what: str) -> None:
        if self._record is not None:
            self._record(what)
        elif what not in self.violations and len(self.violations) < _MAX_FINDINGS:
            self.violations.append(what)

    @contextlib.contextmanager
    def count(self) -> Iterator[AutogradGuard]:
        """Count torch calls and result elements inside the block (the guard must be active)."""
        self.calls = self.elements = 0
        self.complex = False
        self.counting = True
        try:
            yield self
        finally:
            self.counting = False


def WatchedEngine(record: Callable[[str], None]) -> type:
    """A subclass of torch's autograd engine whose every backward pass is recorded.

    Every route into torch autograd's backward (``Tensor.backward``, ``autograd.grad``,
    ``autograd.functional``, ``torch.func``, a fresh ``torch._C._ImperativeEngine()``)
    ends in ``run_backward`` of an engine, and the grader never runs one in a worker.
    """
    base = torch._C._ImperativeEngine

    class _Watched(base):  # type: ignore[misc, valid-type]
        def run_backward(self, *args: Any, **kwargs: Any) -> Any:
            record("torch's autograd engine ran a backward pass")
            return super().run_backward(*args, **kwargs)

    _Watched.__name__ = _Watched.__qualname__ = base.__name__
    return _Watched


_WATCHED_MODULES: Final = ("harness.sandbox.evaluator", "harness.integrity.audit", "harness.sandbox.channel", "harness.sandbox.tripwires",
                           "harness.program", "harness.ops", "torch.autograd", "torch.autograd.graph",
                           "torch.autograd.variable", "torch.overrides", "gc", "threading", "_thread")
"""Modules whose functions and classes a submission has no business replacing in the worker."""
_WATCHED_NAMES: Final = {"torch": ("Tensor", "tensor", "as_tensor", "no_grad", "enable_grad", "set_grad_enabled"),
                         "torch._C": ("_ImperativeEngine", "_enter_dual_level", "_exit_dual_level", "TensorBase",
                                      "DisableTorchFunction", "_is_torch_function_mode_enabled"),
                         "torch._C._autograd": ("_push_saved_tensors_default_hooks",
                                                "_pop_saved_tensors_default_hooks")}
"""Single members of big modules (watching all of torch would cost milliseconds per request)."""
_WATCHED_CLASSES: Final = ("torch.Tensor", "torch._C.TensorBase", "torch.overrides.TorchFunctionMode",
                           "torch.autograd.variable.Variable")
"""Torch classes whose members are watched too (every class of the grader's own modules is)."""


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

    # ---- findings ----

    def flag(self, what: str) -> None:
        """Proof of torch's autograd seen at run time, with the submission's line when one is on the stack."""
        if what in self._kinds or len(self._ledger) >= _MAX_FINDINGS:
            return  # one entry per kind of evidence, at the first line it was seen
        self._kinds.add(what)
        line = self.candidate_line()
        text = f"{what} (line {line})" if line else what
        self._ledger.append(text)
        self.violations.append(text)

    def note(self, construct: str, why: str, line: int | None = None) -> None:
        """A review entry seen at run time."""
        entry = {"line": line, "construct": construct, "why": why}
        if entry not in self.review and len(self.review) < _MAX_FINDINGS:
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

        self._engine_type = WatchedEngine(self.flag)
        self._engine = self._engine_type()
        self._run_backward = self._engine_type.__dict__["run_backward"]
        Variable._execution_engine = self._engine
        torch._C._ImperativeEngine = self._engine_type
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._packed, _unpacked)
        self._hooks.__enter__()  # for the main thread; every other thread gets its own in _start_thread
        self._start_new_thread = _thread.start_new_thread
        _thread.start_new_thread = _thread.start_new = threading._start_new_thread = self._start_thread
        self._freeze, self._frozen = gc.freeze, False
        gc.freeze = self._freeze_called
        self._enter_dual_level = torch._C._enter_dual_level
        self._dual_level_watch = self._watch_call(self._enter_dual_level, "forward-mode AD (a dual level was entered)",
                                                  always=True)
        torch._C._enter_dual_level = self._dual_level_watch
        predispatch = sys.modules.get("torch._functorch.predispatch")
        if predispatch is not None:
            predispatch._enter_dual_level_impl = self._dual_level_watch
        self._disable_watch = self._watch_call(torch._C.DisableTorchFunction,
                                               "switched torch-function modes off (torch._C.DisableTorchFunction), "
                                               "where the grader's autograd guard is one")
        torch._C.DisableTorchFunction = self._disable_watch
        self._threads = {t.ident for t in threading.enumerate()}
        self._snapshot = _Snapshot()
        self._installed = True
        self._guard_state: tuple = ()
        self._guard_state = (type(self.guard), dict(vars(self.guard)), self.violations, self.review, dict(vars(self)))

    @contextlib.contextmanager
    def guarded(self, active: bool = True) -> Iterator[None]:
        """Run candidate code under the autograd guard (``active=False``: timing probes, unguarded)."""
        if not active:
            yield
            return
        with self.guard:
            try:
                yield
            finally:
                self._check_mode()

    def _watch_call(self, original: Callable, what: str, always: bool = False) -> Callable:
        """``original`` behind a function that flags each call the submission makes (``always``: any call)."""
        filenames = self._filenames

        def watched(*args: Any, **kwargs: Any) -> Any:
            if always or sys._getframe(1).f_code.co_filename in filenames:
                self.flag(what)
            return original(*args, **kwargs)

        watched.__name__ = watched.__qualname__ = getattr(original, "__name__", "watched")
        return watched

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

    def _check_mode(self) -> None:
        """At the end of a guarded block: the guard is still the innermost torch-function mode, and switched on."""
        depth = torch._C._len_torch_function_stack()
        if depth == 0 or torch._C._get_function_stack_at(depth - 1) is not self.guard:
            _FLAG(self, f"{_DISABLED}: its torch-function mode was removed")
            torch._C._push_on_torch_function_stack(self.guard)  # so that leaving the block pops the guard
        elif not torch._C._is_torch_function_mode_enabled():
            _FLAG(self, f"{_DISABLED}: torch-function modes were left switched off")

    def _freeze_called(self) -> None:
        # Counting frozen objects takes a walk over all of them: watching the call is cheap.
        self._frozen = True
        self.note("gc.freeze()", "froze objects out of the garbage collector's view, where the grader looks "
                                 "for tensors with autograd history; they were unfrozen and looked at",
                  self.candidate_line())
        self._freeze()

    def _packed(self, tensor: torch.Tensor) -> torch.Tensor:
        self.flag("torch's autograd recorded a graph (it saved a tensor for backward)")
        return tensor

    def _start_thread(self, function: Callable, args: tuple, kwargs: dict | None = None) -> int:
        self.note("a thread", "started a thread: torch's autograd is watched there too, and a person should "
                              "read why an engine needs one", self.candidate_line())
        return self._start_new_thread(self._run_watched, (function, args, kwargs or {}))

    def _run_watched(self, function: Callable, args: tuple, kwargs: dict) -> Any:
        with torch.autograd.graph.saved_tensors_hooks(self._packed, _unpacked), AutogradGuard(self.flag):
            return function(*args, **kwargs)

    def check_held(self) -> None:
        """Mid-request, after the forward pass: tensors with autograd history the submission holds.

        A cheat must keep its tracked tensors between forward and backward, even
        if it drops them before the request ends.
        """
        if self._installed and autograd_tensors():
            self.flag("the forward pass left torch tensors with autograd history alive for backward")

    # ---- re-checking after each request ----

    def after_request(self) -> None:
        """Look for what the request left behind, and for tripwires that were switched off."""
        if not self._installed:
            return
        try:
            self._check_tracked_tensors()
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
        if autograd_tensors():
            self.flag("torch tensors that require grad were left alive by the submission")

    def _check_saved_tensor_hook(self) -> None:
        top = torch._C._autograd._top_saved_tensors_default_hooks(False)
        pack = top[0] if isinstance(top, tuple) and top else None
        if getattr(pack, "__func__", None) is not Tripwires._packed or getattr(pack, "__self__", None) is not self:
            _FLAG(self, f"{_DISABLED}: its saved-tensor hook was removed or covered")
            torch._C._autograd._push_saved_tensors_default_hooks(self._packed, _unpacked)
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
                or self._engine_type.__dict__.get("run_backward") is not self._run_backward:
            tampered.append("the watched autograd engine was replaced")
        guard_now = vars(self.guard)
        if type(self.guard) is not kind or set(guard_now) != set(guard_vars) or any(
                guard_now[k] is not guard_vars[k] for k in ("_record",) if k in guard_now):
            tampered.append("the grader's autograd guard was changed")
        mine = vars(self)
        if set(mine) != set(own_vars) or any(mine[k] is not own_vars[k] for k in own_vars
                                              if k not in ("violations", "_reported", "_frozen", "_guard_state",
                                                           "_kinds", "_tracer", "_ran_new")):
            tampered.append("the grader's runtime checks were changed")
        if self.violations != self._ledger or self.review is not review:
            tampered.append("the grader's record of what it saw was emptied")
        if _thread.start_new_thread != self._start_thread or threading._start_new_thread != self._start_thread:
            tampered.append("the grader's thread watch was removed")
        if gc.freeze != self._freeze_called:
            tampered.append("the grader's watch on gc.freeze was removed")
        for name in self._snapshot.changed():
            tampered.append(f"{name} was replaced")
        if torch._C._enter_dual_level is not self._dual_level_watch \
                or torch._C.DisableTorchFunction is not self._disable_watch:
            tampered.append("the grader's watch on forward-mode AD and torch-function modes was removed")
        for what in tampered[:5]:
            _FLAG(self, f"{_DISABLED}: {what}")

    def _check_threads(self) -> None:
        alive = [t for t in threading.enumerate() if t.ident not in self._threads and t.is_alive()]
        if alive:
            self.note(f"{len(alive)} thread(s) still running",
                      "left threads running after the request, outside what the grader asked for")


_FLAG: Final = Tripwires.flag
"""The class's own ``flag``, kept apart: a submission that shadows ``flag`` on the instance (or the class)
silences what the guard sees, not the report that the guard was touched."""


def _unpacked(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


class _Snapshot:
    """Identities of the functions and classes of the watched modules and classes, cheap to compare again."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, Any, dict[str, int]]] = []
        self.modules: dict[str, Any] = {}
        for module_name in _WATCHED_MODULES:
            module = sys.modules.get(module_name)
            if module is not None:
                self.modules[module_name] = module
                self._add(module_name, module, None)
        for module_name, names in _WATCHED_NAMES.items():
            module = sys.modules.get(module_name)
            if module is not None:
                self.modules[module_name] = module
                self._add(module_name, module, names)
        ops = getattr(sys.modules.get("harness.ops"), "OPS", None) or {}
        for op_name, spec in ops.items():
            if hasattr(spec, "__dict__"):
                self.parts.append((f"harness.ops.OPS[{op_name!r}]", spec, {k: id(v) for k, v in vars(spec).items()}))

    def _add(self, label: str, owner: Any, names: tuple[str, ...] | None) -> None:
        members = vars(owner)
        picked = {k: members.get(k) for k in names} if names else dict(members)
        watched = {k: id(v) for k, v in picked.items() if isinstance(v, _WATCHABLE) or (
            isinstance(owner, type) and isinstance(v, (staticmethod, classmethod, property)))}
        self.parts.append((label, owner, watched))
        for k, v in picked.items():
            if isinstance(v, type) and (label.startswith("harness.") or f"{label}.{k}" in _WATCHED_CLASSES) \
                    and not isinstance(owner, type):
                self._add(f"{label}.{k}", v, None)

    def changed(self) -> list[str]:
        """What is no longer the object it was: ``harness.sandbox.evaluator.Evaluator.do_run`` and the like."""
        found = [f"sys.modules[{name!r}]" for name, module in self.modules.items() if sys.modules.get(name) is not module]
        for label, owner, watched in self.parts:
            members = vars(owner)
            for key, ident in watched.items():
                if id(members.get(key)) != ident:
                    found.append(f"{label}.{key}")
        return found


_WATCHABLE: Final = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                     types.WrapperDescriptorType, types.GetSetDescriptorType, type)
