"""Errors the grader reports to its user as a one-line message and exit code 2, and the words they share."""

from __future__ import annotations

import difflib
from typing import Iterable


class HarnessError(Exception):
    """Bad input to the grader itself: a missing file, a bad rubric or spec, a bad option."""


class MissingSubmission(HarnessError):
    """The file to grade does not exist; ``beside`` names the Python files and notebooks in its folder."""

    def __init__(self, path: object, beside: list[str]) -> None:
        listed = f"; its folder holds {', '.join(beside)}" if beside else ""
        super().__init__(f"{path}: no such file{listed}")
        self.beside = beside


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice ``word`` was most likely meant to be (a typo of it), or None."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return close[0] if close else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean X?)' for the choice ``word`` was most likely meant to be, else ''."""
    meant = closest(word, choices)
    return f" (did you mean {meant}?)" if meant else ""
