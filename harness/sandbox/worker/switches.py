"""Every call that switches a part of the grader's guard off, watched where torch keeps it, so that the
switch is seen at the line that made it, even when it is switched back before anyone looks.

The guard has three parts (``harness.sandbox.worker.tripwires``): a torch-function mode, a
saved-tensor hook and a watched engine. Torch offers a handful of C functions that take the
first two away (pop the mode, switch modes off, skip the mode for one call, cover or pop or
disable the hook, hide it while "tracing"), and the engine is a class attribute. Each function
is replaced, in every module of torch that holds it (``ALIASES``, checked against all of
torch by a test), by a watch that reports the submission's line when the submission made the
call, directly or through torch's own Python helpers (``TorchFunctionMode.__exit__``,
``saved_tensors_hooks``, ``redispatch_function``); the engine attribute becomes a property of
its class's metaclass, which sees every assignment, ``type.__setattr__`` included. A call the
grader makes, or torch makes for itself, is not reported.

What stays out of reach of this module is the originals themselves, kept in the watches'
closures (a dunder walk away, which the static scan lists): a call through one is not seen
here, but what it lets torch do is still counted (``harness.sandbox.worker.counters``).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Final

import torch

__all__ = ["Switch", "SWITCHES", "ALIASES", "install", "engine_property"]


@dataclass(frozen=True)
class Switch:
    module: str
    name: str
    what: str
    """What the call does to the guard, as the violation says it."""
    when: str = "always"
    """Which calls switch something off: ``always``, ``truthy`` (first argument true), ``not_enabled``
    (a torch-function state other than enabled), ``top_mode`` (the grader's mode is on top of the stack),
    ``top_hook`` (the grader's hook is on top)."""
    anyone: bool = False
    """Report every call, whoever makes it (the grader never makes one)."""


_DISABLED: Final = "the submission disabled the grader's guard"

SWITCHES: Final = (
    Switch("torch._C", "_pop_torch_function_stack", f"{_DISABLED}: it took its torch-function mode off the stack",
           "top_mode"),
    Switch("torch._C", "_set_torch_function_state", f"{_DISABLED}: it switched torch-function modes off",
           "not_enabled"),
    Switch("torch._C", "DisableTorchFunction",
           "switched torch-function modes off (torch._C.DisableTorchFunction), where the grader's autograd guard is one"),
    Switch("torch._C", "_set_skip_next_torch_function",
           f"{_DISABLED}: it made torch skip its torch-function mode for the next call", "truthy"),
    Switch("torch._C", "_skip_one_hop_torch_function",
           f"{_DISABLED}: it ran a call past its torch-function mode (redispatch_function)"),
    Switch("torch._C._autograd", "_push_saved_tensors_default_hooks",
           f"{_DISABLED}: it covered its saved-tensor hook with its own"),
    Switch("torch._C._autograd", "_pop_saved_tensors_default_hooks",
           f"{_DISABLED}: it removed its saved-tensor hook", "top_hook"),
    Switch("torch._C._autograd", "_saved_tensors_hooks_disable", f"{_DISABLED}: it switched saved-tensor hooks off"),
    Switch("torch._C._autograd", "_saved_tensors_hooks_set_tracing",
           f"{_DISABLED}: it hid saved-tensor hooks (tracing mode)", "truthy"),
    Switch("torch._C", "_enter_dual_level", "forward-mode AD (a dual level was entered)", anyone=True),
)
"""The C functions that switch a part of the guard off (a test reads their list from torch's stubs)."""

ALIASES: Final = ("torch", "torch._C", "torch._C._autograd", "torch.overrides", "torch.autograd",
                  "torch.autograd.graph", "torch.autograd.forward_ad", "torch._functorch.predispatch",
                  "torch.utils._python_dispatch", "torch._tensor")
"""The modules of torch that hold one of them under some name (``torch.DisableTorchFunction``,
``torch.overrides._pop_torch_function_stack``, ``predispatch._enter_dual_level_impl``); a test
looks through every loaded module of torch for others."""

_TORCH: Final = os.path.dirname(torch.__file__) + os.sep
_STDLIB: Final = os.path.dirname(os.__file__) + os.sep
_DISPATCH: Final = torch.overrides.handle_torch_function.__code__
"""Torch's Python dispatch, which takes the innermost mode off the stack only to call that mode itself
(``_pop_mode_temporarily``): a pop made there is the guard at work, not switched off."""


def install(report: Callable[[Switch, int | None], None], own: set[str], is_guard: Callable[[Any], bool],
            is_hook: Callable[[Any], bool]) -> dict[str, Any]:
    """Put a watch in place of every switch, everywhere torch keeps it; returns ``{dotted name: watch}``.

    ``report(switch, line)`` is called for a switch the submission (one of the files ``own``)
    made; ``is_guard`` and ``is_hook`` recognise the grader's mode and saved-tensor hook.
    """
    watches: dict[str, Any] = {}
    for switch, places in _places().items():
        original = getattr(sys.modules.get(switch.module), switch.name, None)
        if original is None:
            continue
        watch = _watch(original, switch, report, own, is_guard, is_hook)
        watches[f"{switch.module}.{switch.name}"] = watch
        for module_name, key in places:
            module = sys.modules.get(module_name)
            if module is not None and vars(module).get(key) is original:
                setattr(module, key, watch)
    return watches


_PLACES: dict[Switch, list[tuple[str, str]]] = {}


def _places() -> dict[Switch, list[tuple[str, str]]]:
    """Where torch keeps each switch, as (module, name) pairs: found once, in the process every worker is
    forked from (looking through torch's namespaces takes milliseconds; each worker only puts its watches there)."""
    if not _PLACES:
        originals = {}
        for switch in SWITCHES:
            original = getattr(sys.modules.get(switch.module), switch.name, None)
            if original is not None:
                originals[id(original)] = switch
                _PLACES[switch] = []
        for name in ALIASES:
            module = sys.modules.get(name)
            for key, value in list(vars(module).items()) if module is not None else ():
                switch = originals.get(id(value))
                if switch is not None:
                    _PLACES[switch].append((name, key))
    return _PLACES


_places()


def _watch(original: Any, switch: Switch, report: Callable[[Switch, int | None], None], own: set[str],
           is_guard: Callable[[Any], bool], is_hook: Callable[[Any], bool]) -> Callable:
    get_mode, depth = torch._C._get_function_stack_at, torch._C._len_torch_function_stack
    top_hooks, enabled = torch._C._autograd._top_saved_tensors_default_hooks, torch._C._TorchFunctionState.ENABLED
    getframe = sys._getframe

    def switches_off(args: tuple, kwargs: dict) -> bool:
        when = switch.when
        if when == "always":
            return True
        if when == "truthy":
            return bool(args[0]) if args else any(bool(v) for v in kwargs.values())
        if when == "not_enabled":
            return (args[0] if args else next(iter(kwargs.values()), enabled)) != enabled
        if when == "top_mode":
            n = depth()
            return n > 0 and is_guard(get_mode(n - 1))
        top = top_hooks(True)
        return isinstance(top, tuple) and bool(top) and is_hook(top[0])

    def watched(*args: Any, **kwargs: Any) -> Any:
        if switches_off(args, kwargs):
            line = _submission_line(getframe(1), own)
            if line is not None or switch.anyone:
                report(switch, line)
        return original(*args, **kwargs)

    watched.__name__ = watched.__qualname__ = getattr(original, "__name__", switch.name)
    return watched


def _submission_line(frame: Any, own: set[str]) -> int | None:
    """The submission's line when it made this call, itself or through torch's or the standard library's
    Python code; None when the first other frame outward is someone else's (the grader's)."""
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if filename in own:
            return frame.f_lineno
        if code is _DISPATCH:
            return None
        if not (filename.startswith((_TORCH, "<")) or (filename.startswith(_STDLIB) and "-packages" not in filename)):
            return None
        frame = frame.f_back
    return None


class engine_property:
    """``Variable._execution_engine`` as a property of ``Variable``'s metaclass: reading it gives the engine
    in place, and every assignment (``type.__setattr__`` included) is seen before it takes effect."""

    def __init__(self, owner: type, engine: Any, on_set: Callable[[int | None], None], own: set[str]) -> None:
        self._owner, self.engine, self._on_set, self._own = owner, engine, on_set, own

    def __get__(self, cls: Any, meta: Any = None) -> Any:
        return self if cls is None else self.engine

    def __set__(self, cls: Any, value: Any) -> None:
        if value is not self.engine:  # the grader never sets it once this is in place
            self._on_set(_submission_line(sys._getframe(1), self._own))
        self.engine = value

    def __delete__(self, cls: Any) -> None:
        self._on_set(_submission_line(sys._getframe(1), self._own))
        self.engine = None
