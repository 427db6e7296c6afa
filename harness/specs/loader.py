"""YAML spec cases: loading, validating and compiling them to programs.

A spec file holds one case (a mapping) or a list of cases; the format is
described in ``docs/specs.md``. Files are *composed* with PyYAML rather than
loaded, so every node keeps its position and every error names
``file:line:column``. Expressions are compiled by ``harness.specs.expressions`` against the
op table, never evaluated. A case is valid only when torch autograd (float64)
agrees with every number it states.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import yaml

from harness.collector import collector_paused
from harness.lazy_modules import lazy_module
from harness.specs.cases import ParsedCase, _CaseReader
from harness.specs.format import CONCEPTS, DEFAULT_SPECS_DIR, MAX_FILE_BYTES, Expectations, INITS, SpecCase, SpecError
from harness.specs.yaml_nodes import _Source, _compose, split_lines

torch = lazy_module("torch", globals())

__all__ = [
    "SpecCase",
    "Expectations",
    "SpecError",
    "ParsedCase",
    "ParsedFile",
    "load_cases",
    "check_paths",
    "check_specs",
    "SpecCheckResult",
    "spec_files",
    "parse_file",
    "case_ids",
    "split_lines",
    "DEFAULT_SPECS_DIR",
    "CONCEPTS",
    "INITS",
]


# ---- files ---------------------------------------------------------------------------


@dataclass
class ParsedFile:
    path: Path
    text: str
    root: yaml.Node | None
    cases: list[ParsedCase]
    errors: list[SpecError]
    """File-level errors (bad YAML, a root that is not a case or a list of cases)."""

    def all_errors(self) -> list[SpecError]:
        return self.errors + [e for c in self.cases for e in c.errors]


@contextmanager
def _loading() -> Iterator[None]:
    """Settings for validating many tiny cases at once; both are restored afterwards.

    Torch runs single-threaded: spec tensors have a handful of elements, and handing
    each op to a thread pool costs tens of milliseconds per op when the cores are busy.
    The cyclic garbage collector pauses: the YAML nodes of a file live while it is
    read, and enough of them survive a young collection to start a full one, which
    scans every object torch's import made (~0.2 s). They are freed by reference
    counting once the cases are built; any cycles are collected after the pause.
    """
    threads = torch.get_num_threads()
    if threads != 1:
        torch.set_num_threads(1)
    try:
        with collector_paused():
            yield
    finally:
        if threads != 1:
            torch.set_num_threads(threads)


def parse_file(path: str | Path, text: str | None = None, *, check_expectations: bool = True) -> ParsedFile:
    """Read and validate every case of one spec file; errors are collected, never raised."""
    with _loading():
        return _parse_file(Path(path), text, check_expectations)


def _parse_file(path: Path, text: str | None, check_expectations: bool) -> ParsedFile:
    if text is None:
        try:
            text = read_capped(path)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return ParsedFile(path, "", None, [], [SpecError(path, 1, 1, f"cannot read the file: {exc}")])
    src = _Source(str(path), text)
    try:
        root = _compose(src)
    except SpecError as exc:
        return ParsedFile(path, text, None, [], [exc])
    if root is None:
        return ParsedFile(path, text, None, [], [src.error(None, "the file is empty; expected a case or a list of cases")])
    if isinstance(root, yaml.SequenceNode):
        nodes = list(root.value)
        if not nodes:
            return ParsedFile(path, text, root, [], [src.error(root, "the list of cases is empty")])
    elif isinstance(root, yaml.MappingNode):
        nodes = [root]
    else:
        return ParsedFile(path, text, root, [], [src.error(root, "a spec file holds a case (a mapping) or a list of cases")])
    cases = [_CaseReader(src, node, check_expectations).read() for node in nodes]
    return ParsedFile(path, text, root, cases, [])


def read_capped(path: Path) -> str:
    """A spec file's text, read only when it is a regular file of at most ``MAX_FILE_BYTES``."""
    with open(path, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise ValueError("not a regular file")
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES // 1024} KiB, the most a spec file may hold")
    return data.decode("utf-8")


def case_ids(path: str | Path, text: str | None = None) -> list[tuple[str, SpecError]]:
    """The ids a spec file declares, each with its position; a quick read that validates nothing else."""
    try:
        text = read_capped(Path(path)) if text is None else text
        root = _compose(_Source(str(path), text))
    except (OSError, UnicodeDecodeError, ValueError, SpecError):
        return []
    nodes = root.value if isinstance(root, yaml.SequenceNode) else [root] if root is not None else []
    found = []
    for node in nodes:
        if not isinstance(node, yaml.MappingNode):
            continue
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "id" and isinstance(value, yaml.ScalarNode):
                mark = value.start_mark
                found.append((str(value.value), SpecError(path, mark.line + 1, mark.column + 1, "")))
    return found


def spec_files(paths: Iterable[str | Path]) -> list[Path]:
    """The spec files under ``paths``: files as given, folders searched for ``**/*.yaml`` in sorted order."""
    found: list[Path] = []
    for path in map(Path, paths):
        found += sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    return list(dict.fromkeys(found))


@dataclass
class SpecCheckResult:
    files: list[Path]
    parsed: list[ParsedFile]
    cases: list[SpecCase]
    errors: list[SpecError]

    @property
    def case_count(self) -> int:
        return sum(len(p.cases) for p in self.parsed)


def check_specs(paths: Iterable[str | Path], beside: Iterable[str | Path] = ()) -> SpecCheckResult:
    """Validate every case under ``paths``, including that ids are unique across all of them and the spec
    files ``beside`` them (the shipped library, which ``--specs`` grades them with; only their ids are read).

    A folder without any spec file is an error: grading with it would silently grade nothing.
    """
    paths = list(paths)
    files = spec_files(paths)
    with _loading():
        parsed = [parse_file(path) for path in files]
    seen: dict[str, SpecError] = {}
    checked = {f.resolve() for f in files}
    for other in spec_files(beside):
        if other.resolve() not in checked:
            for case_id, where in case_ids(other):
                seen.setdefault(case_id, where)
    errors: list[SpecError] = [SpecError(path, 0, 0, "no spec files (*.yaml) in this folder")
                               for path in map(Path, paths) if path.is_dir() and not any(path.rglob("*.yaml"))]
    cases: list[SpecCase] = []
    for file in parsed:
        errors += file.errors
        for entry in file.cases:
            errors += entry.errors
            duplicate = False
            if entry.id is not None and entry.id_node is not None:
                mark = entry.id_node.start_mark
                here = SpecError(file.path, mark.line + 1, mark.column + 1, "")
                first = seen.setdefault(entry.id, here)
                if first is not here:
                    duplicate = True
                    where = f"{first.path}:{first.line}:{first.column}"
                    shipped = Path(first.path).resolve() not in checked
                    errors.append(SpecError(here.path, here.line, here.column, (
                        f"id {entry.id!r} is already a case of the shipped library ({where}): grading with "
                        "--specs reads both, so choose another id (--only-specs reads yours alone)") if shipped
                        else f"duplicate id {entry.id!r} (first defined at {where})"))
            if entry.case is not None and not duplicate:
                cases.append(entry.case)
    return SpecCheckResult(files, parsed, cases, errors)


def check_paths(paths: Iterable[str | Path]) -> tuple[list[SpecCase], list[SpecError]]:
    """Every valid case and every error (one or more per invalid case) under ``paths``."""
    # The pause ends after the statement that drops the parsed files and their YAML
    # nodes, so the collection that follows has only the cases left to scan.
    with _loading():
        cases, errors = attrgetter("cases", "errors")(check_specs(paths))
    return cases, errors


_LOADED: dict[tuple[Any, ...], tuple[SpecCase, ...]] = {}
"""The last valid load, keyed by the paths and every spec file's bytes: a batch or ``--watch``
grades many times in one process, and parsing the library (computing torch's outcome for each
case) costs more than some grades."""


def _load_key(paths: Sequence[Path]) -> tuple[Any, ...] | None:
    try:
        contents = tuple((str(f), f.read_bytes()) for f in spec_files(paths))
    except OSError:
        return None  # parsed (and reported) afresh
    return tuple(str(p) for p in paths), contents


def load_cases(paths: Iterable[str | Path] = (DEFAULT_SPECS_DIR,)) -> list[SpecCase]:
    """Every case under ``paths``; raises the first SpecError if any case is invalid.

    Unchanged files are parsed once per process; the cases are immutable, so grades share them.
    """
    paths = [Path(p) for p in paths]
    key = _load_key(paths)
    cached = _LOADED.get(key) if key is not None else None
    if cached is not None:
        return list(cached)
    cases, errors = check_paths(paths)
    if errors:
        raise errors[0]
    if key is not None:
        _LOADED.clear()  # one library at a time: a --watch session of an edited spec keeps no stale copies
        _LOADED[key] = tuple(cases)
    return cases
