"""Replays kept across grades: a mutant or a changed rule run on a graph gives the same result every time.

Every grade of a batch (and every save under ``--watch``) runs the same spec cases and, with the
same seed, mostly the same random graphs; its diagnosis replays the catalogue's mutants and the
wrong rules on them. What a replay computes depends only on the graph's content
(``Program.fingerprint``) and on what is replayed, so one process keeps the results, a bounded
number of them and only for small graphs. Trusted code only: nothing here ever held a value the
candidate's engine produced.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Final, Hashable

from harness.program import Program

__all__ = ["remembered", "forget_all"]

ENTRIES: Final = 8192
"""Replays kept (least recently used go first): a batch's spec cases and random graphs times the catalogue."""
LARGEST: Final = 16_384
"""Graphs with more elements and steps than this (``Program.size``) are replayed afresh each time."""
BUDGET: Final = 250_000
"""The most elements and steps kept in all (a result keeps a value per step): some tens of MB at worst."""

_kept: OrderedDict[tuple[bytes, Hashable], tuple[Any, int]] = OrderedDict()
_total = 0
_lock = threading.Lock()
_MISSING = object()


def remembered(program: Program, what: Hashable, compute: Callable[[], Any]) -> Any:
    """``compute()``'s result for replaying ``what`` on ``program``, computed once per process and content."""
    global _total
    size = program.size()
    if size > LARGEST or not _plain(what):
        return compute()
    key = (program.fingerprint(), what)
    with _lock:
        found = _kept.get(key, _MISSING)
        if found is not _MISSING:
            _kept.move_to_end(key)
            return found[0]
    result = compute()  # outside the lock: threads of a batch replay at once (two may compute one key)
    with _lock:
        if key not in _kept:
            _kept[key] = (result, size)
            _total += size
        while len(_kept) > ENTRIES or _total > BUDGET:
            _total -= _kept.popitem(last=False)[1][1]
    return result


def _plain(what: Hashable) -> bool:
    """Whether ``what`` is made of strings, numbers and tuples only: keys compared by value, never by identity."""
    if isinstance(what, tuple):
        return all(_plain(part) for part in what)
    return what is None or isinstance(what, (str, int, float, bool))


def forget_all() -> None:
    """Empty the store (a benchmark measuring replays afresh)."""
    global _total
    with _lock:
        _kept.clear()
        _total = 0
