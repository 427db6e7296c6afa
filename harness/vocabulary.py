"""The grading levels, in order. Standard library only: the fast paths of the CLI read it before torch."""

from typing import Final

LEVELS: Final = ("core", "followups", "extensions")

# Checks that inform the interviewer (what an engine keeps alive, say) rather than grade
# correctness: they cost their small weight when they fail but never change the exit code,
# so a correct engine written in another house style still exits 0.
INFORMATIONAL: Final = frozenset({"followups.saved_tensors"})
