"""The words every stage shares: levels, check outcomes, report statuses, features, concepts.

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

FEATURES: Final = {
    "broadcasting": ("broadcast_forward", "adding tensors of shapes (2, 2) and (2,) raises in forward"),
    "upstream": ("backward_takes_grad", "backward() takes no gradient argument"),
    "numbers": ("number_forward", "a Python number as an operand (a + 1, 2 * a) raises"),
    "no_grad": ("no_grad", "the module defines no no_grad()"),
}
"""Follow-up features a check may require (``feature:NAME``): the fact of the worker's hello that
shows the submission has it, and why a check needing it is not attempted when it does not.
(``feature:passes`` needs nothing to detect: any engine can be run twice.)"""
