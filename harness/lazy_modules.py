"""Modules imported on first use, for the data modules that name torch but are read without it.

The op table, graph programs and comparisons compute with torch only when a graph runs;
the command line, the renderers and ``grade spec`` read them (op names, levels, syntax)
and must not wait seconds for torch to import. ``torch = lazy_module("torch", globals())``
stands for torch until an attribute is first read, then puts the real module in its place,
so every later use costs what a plain ``import torch`` costs.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["lazy_module"]


class _Deferred:
    def __init__(self, name: str, namespace: dict[str, Any], alias: str) -> None:
        self._name = name
        self._namespace = namespace
        self._alias = alias

    def __getattr__(self, attr: str) -> Any:
        module = importlib.import_module(self._name)
        if self._namespace.get(self._alias) is self:
            self._namespace[self._alias] = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def lazy_module(name: str, namespace: dict[str, Any], alias: str | None = None) -> Any:
    """A stand-in for module ``name``, bound in ``namespace`` as ``alias`` (by default the name's first part)."""
    return _Deferred(name, namespace, alias or name.split(".")[0])
