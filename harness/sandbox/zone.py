"""What of the grader a sandbox sees: the modules its processes import, and nothing else.

The template (``trusted/template.py``) is the sandbox's entry point; it imports the zygote and
the worker, and they import a few data modules (the op table, graph programs, the allowlist).
That import closure, read from the modules' own import statements, is the zone: each of its
files is bound on its own at ``/grader/harness/...``, so the reference engine, the bug
catalogue and its mutants, the spec library and every other grader module stay out of
reach. The same closure is what the worker's patch tripwire watches (it reads the
``harness`` modules the worker has loaded), so a module added to the worker's side is
bound and watched without a list to keep.

Standard library only, and regular expressions rather than a parser: it runs before the
template starts, on the path of every grade's start-up.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Final

__all__ = ["ENTRY", "zone_modules", "zone_files"]

ENTRY: Final = "harness.sandbox.trusted.template"
"""The module the sandbox runs (``python -m``)."""

_IMPORT: Final = re.compile(r"^[ \t]*import[ \t]+(harness(?:\.\w+)*)", re.MULTILINE)
_FROM: Final = re.compile(r"^[ \t]*from[ \t]+(harness(?:\.\w+)*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_NAME: Final = re.compile(r"\w+")


def _source_of(root: Path, name: str) -> Path | None:
    path = root.joinpath(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imports(text: str) -> list[str]:
    """Every ``harness`` module a source may import: at module level or inside a function alike, and
    for ``from harness.x import y`` both ``harness.x`` and ``harness.x.y`` (a submodule or a name)."""
    names = [m.group(1) for m in _IMPORT.finditer(text)]
    for match in _FROM.finditer(text):
        module = match.group(1)
        names.append(module)
        names += [f"{module}.{name}" for name in _NAME.findall(match.group(2).split("#")[0]) if name != "as"]
    return names


@functools.cache
def zone_modules(root: Path, entry: str = ENTRY) -> dict[str, Path]:
    """The grader's modules the sandbox imports, by name: ``entry``'s import closure under ``root`` (the
    folder holding ``harness/``), each package's ``__init__`` included."""
    found: dict[str, Path] = {}
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        source = _source_of(root, name)
        if source is None:
            continue  # a name imported from a module, not a module
        found[name] = source
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += _imports(source.read_text(encoding="utf-8"))
    return dict(sorted(found.items()))


def zone_files(root: Path) -> list[Path]:
    """The files to bind: each zone module's source and, when there is one, its compiled form (the
    sandbox cannot write one, and compiling the modules again in every worker costs its start-up)."""
    files: list[Path] = []
    for source in zone_modules(root).values():
        files.append(source)
        compiled = source.parent / "__pycache__" / f"{source.stem}.{_cache_tag()}.pyc"
        if compiled.is_file():
            files.append(compiled)
    return files


@functools.cache
def _cache_tag() -> str:
    import sys

    return sys.implementation.cache_tag
