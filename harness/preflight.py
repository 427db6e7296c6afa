"""Reading a submission before anything runs it.

What can be judged from the source alone is judged here, in milliseconds and
without torch: a file that is not Python at all is bad input (``HarnessError``,
exit 2); Python that cannot be graded (a syntax error, an empty file) is the
submission's own failure (``Unrunnable``, status "error"). The source is never
executed here, nor scanned: the static integrity scan walks the modules a submission may
use, torch among them, so it runs once the grade has imported torch (``grade.scanned``).
"""

from __future__ import annotations

import ast
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from harness import notebooks
from harness.errors import HarnessError, MissingSubmission
from harness.integrity.scan import Findings

__all__ = ["Submission", "Unrunnable", "read_submission", "read_capped", "engine_classes", "suggest_class",
           "MAX_SOURCE_BYTES"]

MAX_SOURCE_BYTES: Final = 1024 * 1024
"""A hand-written engine is a few hundred lines; anything this large is not a submission."""


@dataclass(frozen=True)
class Submission:
    path: Path
    text: str
    sha256: str
    findings: Findings
    note: str = ""
    """How the source was read when it was not simply the file (a notebook's code cells, the class graded)."""
    class_name: str = ""
    """The class to grade when it is not the one asked for ('' when it is): the file's one engine-like class."""


class Unrunnable(Exception):
    """Python source that cannot be graded at all: the candidate's error, reported with its place."""

    def __init__(self, message: str, sha256: str) -> None:
        super().__init__(message)
        self.message = message
        self.sha256 = sha256


def read_submission(path: Path, class_name: str = "Tensor", *, follow_links: bool = True,
                    pick_class: bool = False) -> Submission:
    """The submission at ``path``, read and parsed, never imported: what the source alone decides, in milliseconds.

    Only a regular file is read, and at most MAX_SOURCE_BYTES of it; ``follow_links=False``
    (a batch, whose files the candidates chose) refuses a symbolic link too. With ``pick_class``,
    a file that binds no ``class_name`` but defines exactly one class that looks like an engine
    is read as that class's submission (``Submission.class_name``, and a note saying so).
    """
    path = Path(path)
    raw = read_capped(path, MAX_SOURCE_BYTES, follow_links=follow_links)
    sha256 = hashlib.sha256(raw).hexdigest()
    note = ""
    if path.suffix == notebooks.SUFFIX:
        try:
            text, note = notebooks.notebook_source(raw)
        except ValueError as exc:
            raise HarnessError(f"{path}: {exc}") from None
        raw = text.encode("utf-8", errors="surrogatepass")
    try:
        if b"\0" in raw:
            raise UnicodeDecodeError("utf-8", raw, raw.index(b"\0"), raw.index(b"\0") + 1, "NUL byte")
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HarnessError(f"{path}: not a Python source file (it is binary or not UTF-8 text)") from None
    try:
        tree = ast.parse(text, str(path))
    except SyntaxError as exc:
        if path.suffix not in (".py", notebooks.SUFFIX):
            raise HarnessError(f"{path}: not a Python source file ({exc.msg} at line {exc.lineno})") from None
        raise Unrunnable(_syntax_message(exc), sha256) from None
    except (RecursionError, MemoryError, ValueError) as exc:
        raise Unrunnable(f"the source cannot be parsed: {type(exc).__name__}", sha256) from None
    if not tree.body:
        raise Unrunnable(f"the submission is empty: it defines no class named {class_name!r}", sha256)
    if not _may_bind(tree, class_name):
        engines = engine_classes(tree, class_name)
        if pick_class and len(engines) == 1:
            picked = f"graded the class {engines[0]}: the file defines no {class_name} (--class-name chooses another)"
            return Submission(path, text, sha256, Findings(), "; ".join(n for n in (note, picked) if n), engines[0])
        raise Unrunnable(f"the submission defines no class named {class_name!r}{suggest_class(tree, class_name)}",
                         sha256)
    return Submission(path, text, sha256, Findings(), note)


def read_capped(path: Path, cap: int, *, follow_links: bool = True) -> bytes:
    """The bytes of the regular file at ``path``, refused (HarnessError) when it is anything else or holds
    more than ``cap`` bytes.

    The size is checked before reading and at most ``cap + 1`` bytes are read, so a FIFO,
    a device or a sparse file of many gigabytes costs nothing; the file is opened
    non-blocking and checked again once open, so one swapped in meanwhile is refused too.
    """
    try:
        info = os.stat(path) if follow_links else os.lstat(path)
    except FileNotFoundError:
        raise MissingSubmission(path, _gradable_beside(path)) from None
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the submission: {exc.strerror}") from None
    _check_kind(path, info.st_mode, info.st_size, cap)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the submission: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        _check_kind(path, info.st_mode, info.st_size, cap)
        chunks, size = [], 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the submission: {exc.strerror}") from None
    finally:
        os.close(fd)
    if size > cap:
        raise HarnessError(f"{path}: more than {cap:,} bytes is too large for a submission (at most {cap:,})")
    return b"".join(chunks)


def _gradable_beside(path: Path, most: int = 5) -> list[str]:
    """The Python files and notebooks in the folder of a missing ``path`` (a few, sorted): what was probably meant."""
    try:
        with os.scandir(os.path.dirname(path) or ".") as entries:
            names = sorted(e.name for e in entries if e.name.endswith((".py", ".ipynb")) and not e.name.startswith("."))
    except OSError:
        return []
    return names[:most] + ([f"and {len(names) - most} more"] if len(names) > most else [])


def _check_kind(path: Path, mode: int, size: int, cap: int) -> None:
    if stat.S_ISDIR(mode):
        raise HarnessError(f"{path}: is a folder, not a submission file (grade batch grades a folder)")
    if stat.S_ISLNK(mode):
        raise HarnessError(f"{path}: is a symbolic link, which a batch never follows")
    if not stat.S_ISREG(mode):
        raise HarnessError(f"{path}: not a regular file (a pipe, device or socket is never read)")
    if size > cap:
        raise HarnessError(f"{path}: {size:,} bytes is too large for a submission (at most {cap:,})")


def _may_bind(tree: ast.Module, name: str) -> bool:
    """Whether the module could bind ``name`` at import: a top-level definition, assignment or import of it,
    or anything dynamic enough to bind any name (a star import, ``globals()``, ``exec``, ``setattr``, a module
    ``__getattr__``)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in (name,
                                                                                                  "__getattr__"):
            return True
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
        if isinstance(node, ast.Name) and node.id in ("globals", "exec", "eval", "setattr", "__import__", "vars",
                                                       "__dict__"):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*" or (alias.asname or alias.name).split(".")[0] == name:
                    return True
        if isinstance(node, ast.Global) and name in node.names:
            return True
        if isinstance(node, ast.Attribute) and node.attr in ("__dict__", "modules"):
            return True
    return False


def engine_classes(tree: ast.Module, class_name: str) -> list[str]:
    """The top-level classes but ``class_name`` that look like an engine (a ``backward`` and core ops), the most
    engine-like first."""
    scored = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name != class_name:
            methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            score = ("backward" in methods) * 2 + len(methods & {"__add__", "__mul__", "__matmul__", "relu", "sum"})
            if score >= 3:
                scored.append((-score, node.name))
    return [name for _, name in sorted(scored)]


def suggest_class(tree: ast.Module, class_name: str) -> str:
    """``"; did you mean --class-name Value?"`` when other top-level classes look like the engine, else ''."""
    engines = engine_classes(tree, class_name)
    if not engines:
        return ""
    return f"; did you mean --class-name {' or '.join(engines[:3])}?"


def _syntax_message(exc: SyntaxError) -> str:
    where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
    message = f"{type(exc).__name__} at {where}: {exc.msg}"
    if exc.text:
        message += f"\n    {exc.text.rstrip()}"
        if exc.offset:
            message += "\n    " + " " * (exc.offset - 1) + "^"
    return message
