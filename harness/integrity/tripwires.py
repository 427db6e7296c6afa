"""The runtime half of the integrity check: tripwires inside the worker.

They run in the submission's own process, so they can only ever add evidence:
a candidate that shares the address space can silence them, and their silence
proves nothing. The static scan (``harness.integrity.scan``) and the sandbox
are the layers that do not depend on the candidate's cooperation.
"""

from __future__ import annotations

import gc
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["AutogradGuard", "WatchedEngine", "autograd_tensors"]

_AUTOGRAD_ENTRY_POINTS = {
    "backward": "torch's Tensor.backward",
    "grad": "torch.autograd.grad",
    "requires_grad_": "Tensor.requires_grad_",
    "vjp": "torch.autograd.functional.vjp",
    "jacobian": "torch.autograd.functional.jacobian",
}


class AutogradGuard(TorchFunctionMode):
    """Records every use of torch's own autograd while candidate code runs.

    The candidate's gradients must come from its own rules: any call into
    torch autograd, or any torch result that requires grad, is a violation.
    """

    def __init__(self) -> None:
        super().__init__()
        self.violations: list[str] = []

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        owner = getattr(getattr(func, "__self__", None), "__name__", "")
        if name in _AUTOGRAD_ENTRY_POINTS and not (name == "requires_grad_" and args[1:2] == (False,)
                                                   or kwargs.get("requires_grad") is False):
            self.flag(f"called {_AUTOGRAD_ENTRY_POINTS[name]}")
        elif name == "__set__" and owner == "requires_grad" and len(args) > 1 and bool(args[1]):
            self.flag("set requires_grad=True on a torch tensor")
        result = func(*args, **kwargs)
        if isinstance(result, torch.Tensor) and (result.requires_grad or result.grad_fn is not None):
            self.flag(f"{getattr(func, '__qualname__', name)} returned a torch tensor that requires grad")
        return result

    def flag(self, what: str) -> None:
        if what not in self.violations and len(self.violations) < 20:
            self.violations.append(what)


class WatchedEngine:
    """Stands in for torch's autograd engine in the worker: any backward pass it runs is recorded.

    Every route into torch autograd's backward (``Tensor.backward``, ``autograd.grad``,
    ``autograd.functional``) ends in this engine, however the call was disguised,
    and the grader itself never runs one in a worker.
    """

    def __init__(self, engine: Any, record: Callable[[str], None]) -> None:
        self._engine = engine
        self._record = record

    def run_backward(self, *args: Any, **kwargs: Any) -> Any:
        self._record("torch's autograd engine ran a backward pass")
        return self._engine.run_backward(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def autograd_tensors() -> int:
    """How many live torch tensors require grad or carry autograd history."""
    count = 0
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor):
            try:
                if obj.requires_grad or obj.grad_fn is not None:
                    count += 1
            except Exception:
                continue
    return count
