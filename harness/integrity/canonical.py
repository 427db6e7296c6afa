"""The canonical spelling of a dotted path: every step that lands on a module renamed to that module."""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
import sys
import types
from typing import Any, Final

from harness.integrity.allowlist import ALLOWED_MODULES

__all__ = ["canonical"]


@functools.lru_cache(maxsize=4096)
def canonical(path: str) -> str:
    """``path`` with every step that lands on a module renamed to that module: ``torch.sys.modules`` -> ``sys.modules``.

    Only allowed modules (and builtins) are imported to walk them: they are trusted,
    and every other module is flagged at its import anyway. Steps are looked up
    statically, so no descriptor or module ``__getattr__`` of the walked code runs.
    """
    parts = path.split(".")
    root = parts[0]
    if root == "builtins":
        obj: Any = builtins
    elif root in ALLOWED_MODULES:
        try:
            obj = importlib.import_module(root)
        except Exception:  # not installed here: judged by its spelling
            return path
    else:
        return path
    prefix = root
    for i, part in enumerate(parts[1:], 1):
        nxt = inspect.getattr_static(obj, part, _MISSING)
        if nxt is _MISSING and isinstance(obj, types.ModuleType):
            nxt = sys.modules.get(f"{obj.__name__}.{part}", _MISSING)
        if nxt is _MISSING:
            return ".".join([prefix, *parts[i:]])
        prefix = nxt.__name__ if isinstance(nxt, types.ModuleType) else f"{prefix}.{part}"
        obj = nxt
    return prefix


_MISSING: Final = object()
