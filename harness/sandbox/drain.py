"""A worker's stdout and stderr, on the grader's side: one thread drains every pipe, capped.

Whatever a sandboxed process writes is hostile input: the first ``OUTPUT_CAP`` bytes of each
stream are kept, the rest is read and dropped so that no process blocks on a full pipe.
"""

from __future__ import annotations

import os
import selectors
import threading
from typing import Any

__all__ = ["Drain", "OUTPUT_CAP"]

OUTPUT_CAP = 4000
"""Bytes of a worker's stdout/stderr kept per stream; the rest is read and dropped."""


class Drain:
    """One thread that reads every worker's stdout/stderr pipe, keeping the first ``OUTPUT_CAP`` bytes of each."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._stream_closed = threading.Condition(self._lock)
        """Notified when a stream reaches its end: a killed worker's output is complete at once."""
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._kept: dict[tuple[Any, str], bytearray] = {}
        self._dropped: dict[tuple[Any, str], int] = {}
        self._open: dict[tuple[Any, str], int] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="sandbox-output", daemon=True)
        self._thread.start()

    def add(self, key: Any, stream: str, fd: int) -> None:
        os.set_blocking(fd, False)
        with self._lock:
            self._kept[(key, stream)] = bytearray()
            self._dropped[(key, stream)] = 0
            self._open[(key, stream)] = fd
            self._selector.register(fd, selectors.EVENT_READ, (key, stream))
        self._wake()

    def text(self, key: Any, stream: str, wait: float = 0.0) -> str:
        """What ``stream`` of ``key`` wrote so far; ``wait`` seconds for the writers to close it first."""
        with self._stream_closed:
            if wait:
                self._stream_closed.wait_for(lambda: (key, stream) not in self._open, timeout=wait)
            data = bytes(self._kept.get((key, stream), b""))
            dropped = self._dropped.get((key, stream), 0)
        text = data.decode(errors="replace")
        if dropped:
            text += f"\n[... {dropped} more bytes not kept ...]"
        return text

    def forget(self, key: Any) -> None:
        with self._lock:
            for entry in [k for k in self._kept if k[0] == key]:
                fd = self._open.pop(entry, None)
                if fd is not None:
                    self._selector.unregister(fd)
                    os.close(fd)
                self._kept.pop(entry, None)
                self._dropped.pop(entry, None)
            self._stream_closed.notify_all()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._wake()
        self._thread.join(timeout=2)

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def _run(self) -> None:
        while True:
            events = self._selector.select(timeout=0.5)
            with self._lock:
                if self._closed:
                    for fd in self._open.values():
                        os.close(fd)
                    self._open.clear()
                    self._stream_closed.notify_all()
                    self._selector.close()
                    os.close(self._wake_r)
                    os.close(self._wake_w)
                    return
                for selected, _ in events:
                    if selected.data is None:
                        try:
                            os.read(self._wake_r, 4096)
                        except OSError:
                            pass
                        continue
                    # forget() may have closed this pipe since select() returned, and a new
                    # pipe may already have its number: read only what is still registered.
                    if self._open.get(selected.data) == selected.fd:
                        self._read(selected.fd, selected.data)

    def _read(self, fd: int, entry: tuple[Any, str]) -> None:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._selector.unregister(fd)
            os.close(fd)
            self._open.pop(entry, None)
            self._stream_closed.notify_all()  # _run holds the lock
            return
        kept = self._kept[entry]
        room = OUTPUT_CAP - len(kept)
        kept += chunk[:max(room, 0)]
        self._dropped[entry] += max(0, len(chunk) - max(room, 0))
