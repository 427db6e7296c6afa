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

KINDS: Final = ("verdict", "informational", "missing_member", "stub", "missing_feature", "excused", "stopped")
"""Why a check ended as it did, as a field (``checks[].kind``) that no reader parses out of its message:
``verdict`` (judged: passed, failed, error, timeout), ``informational`` (judged, but never changes the
exit code), ``missing_member`` and ``stub`` (not attempted: the class lacks a member its graphs need, or
has only a stub of it; ``checks[].reason`` names the member), ``missing_feature`` (not attempted: a
follow-up feature the engine does not offer; ``reason`` names it), ``excused`` (skipped: not required by
the agreed interface, or not credited in the variant graded) and ``stopped`` (skipped: the grade ran out
of time for it)."""

CONFIDENCES: Final = ("confirmed", "likely", "unexplained")
"""How sure a root cause is (``root_causes[].confidence``): ``confirmed`` when the experiments that tell
it from its rivals came out as it predicts and as none of them does; ``likely`` when it reproduces the
failures but no experiment could rule its rivals out; ``unexplained`` for failures grouped around the op
nearest to them, which no wrong rule reproduces."""

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
