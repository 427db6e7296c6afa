"""The cyclic garbage collector paused while work makes many objects that are not garbage yet.

A collection scans every object the process holds (torch's own included); while an import
or a large graph is being built, the allocations trigger full ones that find nothing to
free. Pausing costs nothing: reference counting still frees what it can, and the cycles left
wait for the first collection after the pause.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

__all__ = ["collector_paused"]


@contextmanager
def collector_paused(*, freeze: bool = False) -> Iterator[None]:
    """Pause the collector while the block runs, then leave it as it was.

    ``freeze`` moves every object alive at the end out of later collections' view: for
    imports, whose objects live as long as the process.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if collecting:
            gc.enable()
