"""The words every stage shares: levels, check outcomes, report statuses, concepts.

Standard library only: the command line's fast paths and the sandbox's worker read it
before (or without) torch, and the renderers read it instead of the op table. The
concepts themselves (names, texts, examples) are data: ``harness.concepts`` reads them
from ``harness/data/concepts.yaml``; ``@check`` and the spec loader accept only those.
"""

from typing import Final

LEVELS: Final = ("core", "followups", "extensions")

# Checks that inform the interviewer (what an engine keeps alive, say) rather than grade
# correctness: they cost their small weight when they fail but never change the exit code,
# so a correct engine written in another house style still exits 0.
INFORMATIONAL: Final = frozenset({"followups.saved_tensors"})

OUTCOMES: Final = ("passed", "failed", "error", "timeout", "not_attempted", "skipped")
"""What one check can end in (the JSON report's ``checks[].outcome``)."""

FAILING: Final = ("failed", "error", "timeout")
"""The outcomes that are a fault of the submission (not attempted and skipped are not)."""

STATUSES: Final = ("graded", "error", "timeout", "integrity_violation")
"""What a whole grade can end in (the JSON report's ``status``)."""
