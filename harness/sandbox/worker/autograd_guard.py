"""Torch's own autograd, watched in the worker: the torch-function mode around candidate code, and the
engine subclass that records every backward pass torch runs.

``AutogradGuard`` flags every call into torch's autograd and every torch result that requires
grad; ``WatchedEngine`` is the engine ``Tripwires.install`` puts in torch's place.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import os
import sys
from typing import Any, Callable, Final, Iterator

import torch
from torch.overrides import TorchFunctionMode

from harness.sandbox.worker.counters import graph_nodes
from harness.sandbox.worker.formulas import foreign_node
from harness.variants import FOREIGN_FORMULA

__all__ = ["AutogradGuard", "MAX_FINDINGS", "WatchedEngine", "autograd_tensors", "carries_autograd", "read_frames_with",
           "UNSEEN_GRAPH", "UNWATCHED_BACKWARD"]

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
MAX_FINDINGS: Final = 20
UNSEEN_GRAPH: Final = "torch's autograd recorded a graph out of the guard's sight (its count of graph nodes moved)"
"""Torch's own count of recorded nodes moved between two looks of the guard: a graph was recorded while
the guard was switched off, whatever was switched back on since."""
UNWATCHED_BACKWARD: Final = ("a backward pass ran past the grader's watched engine (torch's count of backward "
                             "passes moved without it: its engine was swapped or called directly)")
_REQUIRES_GRAD = torch._C.TensorBase.requires_grad.__get__
_GRAD_FN = torch._C.TensorBase.grad_fn.__get__
_TensorBase = torch._C.TensorBase
_COMPRESS, _REPEAT, _MAP = itertools.compress, itertools.repeat, map
"""Bound before the submission runs: replacing ``itertools.compress`` later cannot hide a tensor."""
DECOMPOSED: Final = ("computed with torch's decompositions (torch._decomp), where torch writes its derivative "
                     "formulas as Python")
_getframe = sys._getframe
_DECOMPOSITIONS: Final = os.path.join(os.path.dirname(torch.__file__), "_decomp") + os.sep
"""Torch's decompositions, ``threshold_backward`` and the other backward formulas among them, as Python code
that calls torch's ops: an op called from there is one of torch's formulas at work, not the submission's rule."""


def _frame_file(depth: int) -> str:
    """The file of the code ``depth`` frames above the caller."""
    return _getframe(depth + 1).f_code.co_filename


_CALLER_FILE: list[Callable[[int], str]] = [_frame_file]
"""How the guard reads its caller's file: the audit hook's quiet reader once it is installed (``read_frames_with``)."""


def read_frames_with(reader: Callable[[int], str]) -> None:
    """Read callers' files with ``reader`` from now on: one that the audit hook does not judge.

    Reading a frame raises two audit events (``sys._getframe`` and ``f_code``), and the guard reads
    one at every torch call: judged by the hook, that was most of a guarded run's time.
    """
    _CALLER_FILE[0] = reader


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


def autograd_tensors(skip: Callable[[Any], bool] | None = None) -> int:
    """How many live torch tensors require grad or carry autograd history (but those ``skip`` names)."""
    objects = gc.get_objects()
    # The same isinstance test carries_autograd starts with, run by map at C speed: a large
    # graph is hundreds of thousands of objects, of which few are torch tensors.
    tensors = _COMPRESS(objects, _MAP(isinstance, objects, _REPEAT(_TensorBase)))
    return sum(1 for obj in tensors if carries_autograd(obj) and not (skip is not None and skip(obj)))


class AutogradGuard(TorchFunctionMode):
    """Records every use of torch's own autograd while candidate code runs in this thread.

    It also counts torch calls and the elements they produce while ``counting``
    is set: the backward-cost probe compares those counts across input sizes. And it
    reads torch's count of recorded graph nodes at every call (``seq``, this thread's):
    a count that moved since the last call was moved out of its sight.
    """

    def __init__(self, record: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.violations: list[str] = []
        self._record = record
        self.seq = graph_nodes()
        """Torch's count of recorded nodes in this thread when the guard last looked (construct it there)."""
        self.formulas = False
        """Whether a result's node must be the submission's own Function (``--variant function``)."""
        self.counting = False
        self.calls = 0
        self.elements = 0
        self.complex = False
        """Whether a counted call returned a complex tensor."""

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if graph_nodes() != self.seq:
            self.flag(UNSEEN_GRAPH)
            self.seq = graph_nodes()
        if _CALLER_FILE[0](1).startswith(_DECOMPOSITIONS):
            self.flag(DECOMPOSED)
        if func not in _PLAIN:
            self._inspect_call(func, args, kwargs or {})
        result = func(*args, **kwargs) if kwargs else func(*args)
        if isinstance(result, _TensorBase):
            try:
                tracked = _REQUIRES_GRAD(result) or _GRAD_FN(result) is not None
            except Exception:  # a tensor torch itself cannot read is not evidence
                tracked = False
            if tracked:  # what this call recorded is seen here (an untracked result recorded nothing)
                self.seq = graph_nodes()
                self.flag(f"{getattr(func, '__qualname__', getattr(func, '__name__', ''))} returned a torch tensor "
                          "that requires grad")
                if self.formulas and (name := foreign_node(_GRAD_FN(result))) is not None:
                    self.flag(f"{FOREIGN_FORMULA} ({name})")
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
        elif "_backward" in name:  # threshold_backward, convolution_backward (torch.nn.grad), batch_norm_backward_*
            self.flag(f"called torch's derivative formula {name} (a backward kernel, not the submission's rule)")
        elif len(_PLAIN) < _MAX_PLAIN:
            try:
                _PLAIN.add(func)
            except TypeError:  # unhashable: judged again at every call
                pass

    def flag(self, what: str) -> None:
        if self._record is not None:
            self._record(what)
        elif what not in self.violations and len(self.violations) < MAX_FINDINGS:
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


def WatchedEngine(record: Callable[[str], None], runs: list[int]) -> type:
    """A subclass of torch's autograd engine whose every backward pass is recorded, and counted in ``runs[0]``.

    Every route into torch autograd's backward (``Tensor.backward``, ``autograd.grad``,
    ``autograd.functional``, ``torch.func``, a fresh ``torch._C._ImperativeEngine()``)
    ends in ``run_backward`` of an engine, and the grader never runs one in a worker.
    A pass that computes gradients without storing them (``accumulate_grad`` false) is
    ``torch.autograd.grad``, whatever called it, which no variant allows.
    """
    base = torch._C._ImperativeEngine

    class _Watched(base):  # type: ignore[misc, valid-type]
        def run_backward(self, *args: Any, **kwargs: Any) -> Any:
            runs[0] += 1
            record("torch's autograd engine ran a backward pass")
            accumulate = kwargs.get("accumulate_grad", args[6] if len(args) > 6 else True)
            if not accumulate:
                record(GRAD_PASS)
            return super().run_backward(*args, **kwargs)

    _Watched.__name__ = _Watched.__qualname__ = base.__name__
    return _Watched


GRAD_PASS: Final = "torch.autograd.grad ran (a backward pass that returns gradients instead of storing them)"
