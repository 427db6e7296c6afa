"""Worker side of the saved-tensor audit: which storages a forward graph keeps alive.

From the output object the walk follows the candidate's references (attributes,
slots, containers, closure cells, bound methods) and collects the storage of every
torch tensor it meets. It stops at the leaves (their values are the caller's, not the
graph's), never follows a function's globals, a module or a class (shared by every
graph, not kept by this one), and counts a storage once however many tensors or nodes
share it. It reports sizes and which step's result each storage is; the grader decides
what an op needed.
"""

from __future__ import annotations

import gc
import types
from typing import Any, Final, Iterable

import torch

__all__ = ["kept_storages", "storage_key"]

MAX_OBJECTS: Final = 200_000
"""Objects a walk visits at most: a graph of a few nodes needs hundreds."""
_OPAQUE: Final = (type, types.ModuleType, types.CodeType, str, bytes, bytearray, int, float, complex, bool,
                  type(None), types.FrameType)


def storage_key(t: torch.Tensor) -> tuple[int, int] | None:
    """A storage's identity while it is alive: its address and size (None for an empty one)."""
    storage = t.untyped_storage()
    return (storage.data_ptr(), storage.nbytes()) if storage.nbytes() else None


def _referents(obj: Any, kind: type) -> Iterable[Any]:
    if issubclass(kind, types.FunctionType):
        # Its closure and defaults are this function's own; its globals are the module's.
        cells = [c.cell_contents for c in obj.__closure__ or () if _filled(c)]
        return [*cells, *(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]
    if issubclass(kind, types.MethodType):
        return [obj.__self__, obj.__func__]
    return gc.get_referents(obj)


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def kept_storages(root: Any, stop: set[int], skip: set[tuple[int, int]]) -> tuple[dict[tuple[int, int], torch.Tensor],
                                                                                      bool]:
    """Storages reachable from ``root`` (one tensor of each), without passing through objects whose id is in
    ``stop`` or counting storages in ``skip``; and whether the walk gave up at ``MAX_OBJECTS``."""
    seen: set[int] = set()
    found: dict[tuple[int, int], torch.Tensor] = {}
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        if len(seen) >= MAX_OBJECTS:
            return found, True
        seen.add(id(obj))
        kind = type(obj)  # never obj.__class__: a property of the candidate's could lie
        if issubclass(kind, torch.Tensor):
            key = storage_key(obj)
            if key is not None and key not in skip:
                found.setdefault(key, obj)
            continue
        if (id(obj) in stop and obj is not root) or issubclass(kind, _OPAQUE):
            continue
        stack.extend(_referents(obj, kind))
    return found, False
