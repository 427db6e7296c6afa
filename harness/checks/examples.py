"""The random programs a property check tries, drawn once and kept.

While a candidate passes, the programs hypothesis draws depend only on the
strategy, the number of examples and the seed, not on the candidate. Drawing
them costs hypothesis's own bookkeeping (milliseconds a program, most of a
grade's time), so they are drawn once per (strategy, examples, seed) and kept:
in this process, in the user's cache folder, and shipped with the grader for
the default settings. A property check runs them all in a few batched requests
and hands the search to hypothesis only when one fails, to shrink it; the
search draws the very same programs in the same order, so the grade is the
same either way.

``python -m harness.checks.redraw`` rewrites the shipped programs.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any, Callable, Final

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings

from harness import __version__
from harness.program import Program

__all__ = ["search_settings", "drawn_programs", "SHIPPED", "write_shipped"]

SHIPPED: Final = Path(__file__).resolve().parent.parent / "data" / "examples"
"""Programs drawn for the default settings, shipped so that a first grade does not draw them."""

_DRAWING: Final = 2
"""Changes whenever the way programs are drawn changes without a new grader version."""

_memory: dict[str, tuple[Program, ...]] = {}
_lock = threading.Lock()


def search_settings(max_examples: int) -> settings:
    """The settings of every property search, and of the draw that must reproduce it."""
    return settings(max_examples=max(1, max_examples), database=None, deadline=None, derandomize=False,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False, verbosity=Verbosity.quiet,
                    phases=(Phase.generate, Phase.shrink), print_blob=False)


def drawn_programs(key: str, strategy: Any, max_examples: int, seed_value: int) -> tuple[Program, ...]:
    """The programs the search over ``strategy`` draws first, in order, while nothing fails.

    ``key`` names the strategy and its options; it must change whenever they do.
    """
    name = _name(key, max_examples, seed_value)
    with _lock:
        if name in _memory:
            return _memory[name]
    programs = _load(SHIPPED / f"{name}.json.gz") or _load(_cache_dir() / f"{name}.json.gz")
    if programs is None:
        programs = _draw(strategy, max_examples, seed_value)
        _store(_cache_dir() / f"{name}.json.gz", programs)
    with _lock:
        _memory[name] = programs
    return programs


def _draw(strategy: Any, max_examples: int, seed_value: int) -> tuple[Program, ...]:
    drawn: list[Program] = []

    @search_settings(max_examples)
    @seed(seed_value)
    @given(strategy)
    def record(program: Program) -> None:
        drawn.append(program)

    record()
    return tuple(drawn)


def _name(key: str, max_examples: int, seed_value: int) -> str:
    # Versions too: another hypothesis (or grader) may draw other programs for the same seed.
    text = (f"{key}|{max_examples}|{seed_value}|hypothesis {hypothesis.__version__}|grader {__version__}"
            f"|drawing {_DRAWING}")
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "autograd-grader" / "examples"


def _load(path: Path) -> tuple[Program, ...] | None:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return tuple(Program.from_wire(wire) for wire in json.load(f))
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None


def _store(path: Path, programs: tuple[Program, ...]) -> None:
    """Best effort: a cache folder that cannot be written only means drawing again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        data = json.dumps([p.to_wire() for p in programs]).encode()
        with open(partial, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as f:
            f.write(data)
        os.replace(partial, path)
    except OSError:
        pass


def write_shipped(searches: list[tuple[str, Callable[[], Any], int, int]]) -> list[Path]:
    """Draw and write the shipped programs for ``(key, strategy factory, examples, seed)``."""
    SHIPPED.mkdir(parents=True, exist_ok=True)
    written = []
    for key, make, max_examples, seed_value in searches:
        path = SHIPPED / f"{_name(key, max_examples, seed_value)}.json.gz"
        _store(path, _draw(make(), max_examples, seed_value))
        written.append(path)
    return written

