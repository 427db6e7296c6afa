"""How far a batch has got: one redrawn line on a terminal, one plain line per submission when piped."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from harness.report.model import Report

__all__ = ["Progress"]

_BAR = 24


class Progress:
    """Counts finished submissions and shows done/total, elapsed, ETA, failures and review flags.

    On a terminal a ticker thread redraws the line twice a second, so elapsed time
    and ETA move while a slow submission grades; piped, each finished submission
    prints one line and nothing else is written.
    """

    def __init__(self, total: int, *, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.total = total
        self.done = 0
        self.graded_now = 0
        self.failures = 0
        self.review = 0
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.live:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()

    def reused(self, count: int) -> None:
        """Count results kept from an earlier run as done (they take no time, so no part in the ETA)."""
        with self._lock:
            self.done += count
            if count and not self.live:
                self.stream.write(f"[{self.done}/{self.total}] {count} kept from an earlier run\n")
                self.stream.flush()

    def finished(self, sid: str, report: Report) -> None:
        """Count one finished submission and show it."""
        with self._lock:
            self.done += 1
            self.graded_now += 1
            if report.status != "graded":
                self.failures += 1
            if report.integrity_review or (report.interview is not None and report.interview.needs_review):
                self.review += 1
            if self.live:
                self._draw()
            else:
                self.stream.write(f"[{self.done}/{self.total}] {sid}: {_outcome(report)}\n")
                self.stream.flush()

    def close(self) -> None:
        """Stop redrawing; leave the last line on screen."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.live:
            with self._lock:
                self._draw()
                self.stream.write("\n")
                self.stream.flush()

    def line(self) -> str:
        """The status line: bar, done/total, elapsed, ETA, failures and review flags so far."""
        elapsed = time.monotonic() - self.started
        filled = int(_BAR * self.done / self.total) if self.total else _BAR
        left = self.total - self.done
        if self.graded_now and left:
            eta = _clock(elapsed / self.graded_now * left)
        else:
            eta = "--:--" if left else "0:00"
        return (f"[{'#' * filled}{'.' * (_BAR - filled)}] {self.done}/{self.total}  "
                f"elapsed {_clock(elapsed)}  ETA {eta}  failures {self.failures}  review {self.review}")

    def _draw(self) -> None:
        self.stream.write("\r\x1b[K" + self.line())
        self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(0.5):
            with self._lock:
                self._draw()


def _outcome(report: Report) -> str:
    text = f"{report.status}, {report.score:g}/{report.max_score:g}"
    if report.interview is not None:
        text += ", interview " + ("passed" if report.interview.passed else "not passed")
    if report.integrity_review:
        text += f", {len(report.integrity_review)} review flags"
    if report.status in ("error", "timeout") and report.message:
        first = (report.message.splitlines() or [""])[0][:100]
        # The message may be the submission's own text: nothing in it may steer the terminal.
        text += ": " + "".join(ch if ch.isprintable() else "?" for ch in first)
    return text


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
