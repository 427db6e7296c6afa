"""What the worker's probes measure on the submission's objects: which are still alive, what a graph
keeps reachable, and how many Python calls a backward pass makes; and the ballast that moves a graph's
objects to other addresses."""

from __future__ import annotations

import contextlib
import gc
import sys
import types
import weakref
from typing import Any, Callable

import torch

__all__ = ["ballast", "count_alive", "counting_python_calls", "reachable", "reachable_of_shape", "weak"]


def weak(obj: Any) -> Callable[[], Any]:
    """A weak reference to ``obj``, or a dead one when its class allows none (``__slots__``)."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return lambda: None


def count_alive(probes: list[Callable[[], Any]]) -> int:
    """How many of the pairs (object, its .data) in ``probes`` (objects first, then their data) still live."""
    half = len(probes) // 2
    return sum(probes[i]() is not None or probes[half + i]() is not None for i in range(half)) if half else 0


_MAX_REACHED = 200_000


def reachable(roots: list[Any], stop: set[int] = frozenset()) -> dict[int, Any]:  # type: ignore[assignment]
    """Objects reachable from ``roots`` through references, not through modules, classes or module globals.

    What a module or a class holds lives as long as the program: it is not what a graph keeps alive.
    """
    module_dicts = {id(vars(m)) for m in list(sys.modules.values()) if m is not None and hasattr(m, "__dict__")}
    seen: dict[int, Any] = {}
    todo = list(roots)
    while todo and len(seen) < _MAX_REACHED:
        obj = todo.pop()
        key = id(obj)
        if key in seen or key in stop or key in module_dicts or isinstance(obj, (type, types.ModuleType)):
            continue
        seen[key] = obj
        todo.extend(gc.get_referents(obj))
    return seen


def reachable_of_shape(roots: list[Any], shape: tuple[int, ...]) -> int:
    """How many torch tensors of ``shape`` are reachable from ``roots``."""
    return sum(1 for obj in reachable(roots).values() if isinstance(obj, torch.Tensor) and tuple(obj.shape) == shape)


class _PythonCalls:
    calls = 0


@contextlib.contextmanager
def counting_python_calls(files: set[str]) -> Any:
    """Count the calls the submission's own code (``files``) makes or receives, in this thread: its functions
    that run and the builtins it calls. A library's own work (numpy formatting an array it prints, say) is
    not the submission's: it grows with the input whoever calls it."""
    counter = _PythonCalls()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if (event == "call" or event == "c_call") and frame.f_code.co_filename in files:
            counter.calls += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield counter
    finally:
        sys.setprofile(previous)


class _Ballast:
    """An object the size of a small instance with a ``__dict__``, as most engines' nodes are."""

    def __init__(self) -> None:
        self.value = None


def ballast(count: int) -> list[Any]:
    """``count`` objects (at most 100,000) to hold while a graph runs: allocated first, they move every address
    the graph's objects get."""
    return [_Ballast() for _ in range(max(0, min(count, 100_000)))]
