"""The check registry: every check names a level and a concept the vocabulary knows."""

import pytest

from harness.concepts import concepts
from harness.vocabulary import LEVELS


def _registered():
    import harness.checks.properties  # noqa: F401  -- registers the property checks
    import harness.checks.saved_tensors  # noqa: F401  -- registers the saved-tensor audit
    from harness.checks.targeted import CHECKS

    return CHECKS


def test_every_check_has_a_known_level_and_concept():
    checks = _registered()
    assert len(checks) > 30
    assert [c.id for c in checks if c.level not in LEVELS] == []
    assert [c.id for c in checks if c.concept not in concepts()] == []


@pytest.mark.parametrize("level, concept, words", [
    ("core", "no_such_concept", "unknown concept 'no_such_concept'"),
    ("basics", "accumulation", "unknown level 'basics'"),
])
def test_check_refuses_an_unknown_level_or_concept(level, concept, words):
    from harness.checks.targeted import CHECKS, check

    before = len(CHECKS)
    with pytest.raises(ValueError, match=words):
        check("core.made_up", level, concept)
    assert len(CHECKS) == before
