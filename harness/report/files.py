"""Reports written to disk: each file appears whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from harness.report.model import Report
from harness.report.formats import FORMATS, render

__all__ = ["write_atomic", "write_formats", "SUFFIXES"]

SUFFIXES = {name: f.suffix for name, f in FORMATS.items() if f.suffix}
"""The file ending of each format ``write_formats`` writes (harness.report.formats declares them)."""


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename.

    A reader (or a run stopped half way) sees the old file or the new one, never a
    half-written one.
    """
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None  # name the file asked for, not the temporary
    try:
        # Any text can be written: a lone surrogate (from a file name or a submission's exception)
        # becomes its escape instead of stopping the writer.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.errno is not None:
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise


def write_formats(report: Report, folder: Path, stem: str) -> list[Path]:
    """Write the report in every format with a file ending (``stem.txt``, ``stem.json``, ``stem.md``) in
    ``folder``; return the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt, suffix in SUFFIXES.items():
        path = folder / f"{stem}{suffix}"
        write_atomic(path, render(report, fmt) + "\n")
        paths.append(path)
    return paths
