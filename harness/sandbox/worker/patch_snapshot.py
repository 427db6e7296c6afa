"""Identities of the grader's own functions and classes and of torch's, taken in the worker before the
submission runs, to notice what it replaced."""

from __future__ import annotations

import operator
import sys
import types
from typing import Any, Final

__all__ = ["Snapshot", "prepare"]

_WATCHED_MODULES: Final = ("torch.autograd", "torch.autograd.graph", "torch.autograd.variable", "torch.overrides",
                           "gc", "threading", "_thread")
"""Modules whose functions and classes a submission has no business replacing in the worker; and every
module of the grader's that the worker has loaded (``_grader_modules``): what the sandbox binds."""
_WATCHED_NAMES: Final = {"torch": ("Tensor", "tensor", "as_tensor", "no_grad", "enable_grad", "set_grad_enabled"),
                         "torch._C": ("_ImperativeEngine", "_enter_dual_level", "_exit_dual_level", "TensorBase",
                                      "DisableTorchFunction", "_is_torch_function_mode_enabled"),
                         "torch._C._autograd": ("_push_saved_tensors_default_hooks",
                                                "_pop_saved_tensors_default_hooks")}
"""Single members of big modules (watching all of torch would cost milliseconds per request)."""
_WATCHED_CLASSES: Final = ("torch.Tensor", "torch._C.TensorBase", "torch.overrides.TorchFunctionMode",
                           "torch.autograd.variable.Variable")
"""Torch classes whose members are watched too (every class of the grader's own modules is)."""


class Snapshot:
    """Identities of the functions and classes of the watched modules and classes, cheap to compare again.

    Each part keeps its members' names and the objects themselves (not their ``id()``: an object kept
    alive is never replaced by another at its address, and ``id()`` raises an audit event per call),
    compared by identity at C speed; only a part that changed is looked at name by name.
    """

    def __init__(self) -> None:
        self.parts: list[tuple[str, Any, tuple[str, ...], tuple[Any, ...]]] = []
        self.modules: dict[str, Any] = {}
        if _PLAN:
            # Which members to watch was worked out in the template; their identities are taken now.
            self.parts = [(label, owner, keys, tuple(_MAP(vars(owner).get, keys))) for label, owner, keys in _PLAN]
            self.modules = {name: module for name, module in _PLANNED.items() if sys.modules.get(name) is module}
            for module_name in _grader_modules():
                if module_name not in _PLANNED and sys.modules.get(module_name) is not None:
                    self.modules[module_name] = sys.modules[module_name]
                    self._add(module_name, sys.modules[module_name], None)
            return
        for module_name in (*_grader_modules(), *_WATCHED_MODULES):
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
                members = dict(vars(spec))
                self.parts.append((f"harness.ops.OPS[{op_name!r}]", spec, tuple(members), tuple(members.values())))

    def _add(self, label: str, owner: Any, names: tuple[str, ...] | None) -> None:
        members = vars(owner)
        picked = {k: members.get(k) for k in names} if names else dict(members)
        watched = {k: v for k, v in picked.items() if isinstance(v, _WATCHABLE) or (
            isinstance(owner, type) and isinstance(v, (staticmethod, classmethod, property)))}
        self.parts.append((label, owner, tuple(watched), tuple(watched.values())))
        for k, v in picked.items():
            if isinstance(v, type) and (label.startswith("harness.") or f"{label}.{k}" in _WATCHED_CLASSES) \
                    and not isinstance(owner, type):
                self._add(f"{label}.{k}", v, None)

    def changed(self) -> list[str]:
        """What is no longer the object it was: ``harness.sandbox.worker.evaluator.Evaluator.do_run`` and the like."""
        found = [f"sys.modules[{name!r}]" for name, module in self.modules.items() if sys.modules.get(name) is not module]
        for label, owner, keys, objects in self.parts:
            get = vars(owner).get
            if not _ALL(_MAP(_IS, _MAP(get, keys), objects)):
                found.extend(f"{label}.{key}" for key, obj in zip(keys, objects) if get(key) is not obj)
        return found


_PLAN: Final[list[tuple[str, Any, tuple[str, ...]]]] = []
_PLANNED: Final[dict[str, Any]] = {}


def prepare() -> None:
    """Work out once, in the template, which members each part watches: a dozen workers per grade then only
    take their identities (about 3 ms less each). A module imported later is still watched, in full."""
    snapshot = Snapshot()
    _PLAN[:] = [(label, owner, keys) for label, owner, keys, _ in snapshot.parts]
    _PLANNED.update(snapshot.modules)


_IS, _MAP, _ALL = operator.is_, map, all
"""Bound before the submission runs: replacing ``builtins.all`` or ``operator.is_`` later changes no comparison."""
_WATCHABLE: Final = (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                     types.WrapperDescriptorType, types.GetSetDescriptorType, types.MethodWrapperType, type)


def _grader_modules() -> list[str]:
    """The grader's modules loaded in this process, by name: the sandbox's zone, as the worker sees it
    (no list of them to keep: a module added to the worker's side is watched once it is imported)."""
    return sorted(name for name in list(sys.modules) if name == "harness" or name.startswith("harness."))
