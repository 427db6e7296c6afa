"""The grading levels, in order. Standard library only: the fast paths of the CLI read it before torch."""

from typing import Final

LEVELS: Final = ("core", "followups", "extensions")
