"""The check registry: one ``Check`` type; every check names a level and a concept the vocabulary knows."""

import pytest

from harness.checks import registry
from harness.checks.registry import Check, check, registered
from harness.concepts import concepts
from harness.grade import GradeOptions, planned_checks
from harness.vocabulary import LEVELS


def test_every_check_has_a_known_level_and_concept():
    checks = planned_checks(GradeOptions())  # the declared checks and every shipped spec case
    assert len(registered()) > 30 and len(checks) > len(registered())
    assert all(isinstance(c, Check) for c in checks)
    assert [c.id for c in checks if c.level not in LEVELS] == []
    assert [c.id for c in checks if c.concept not in concepts()] == []
    assert len({c.id for c in checks}) == len(checks)


def test_the_declared_checks_run_in_the_registry_order_whatever_was_imported_first():
    ids = [c.id for c in registered()]
    # targeted, then ties, then properties, then the saved-tensor audit
    assert ids[:2] == ["core.requires_grad", "core.grad_none"]
    assert ids.index("extensions.numbers") < ids.index("extensions.ties.maximum") < ids.index("core.properties")
    assert ids[-1] == "followups.saved_tensors"


def test_a_title_and_a_hint_come_from_the_docstring():
    by_id = {c.id: c for c in registered()}
    order = by_id["core.order"]
    assert order.title == "Backward visits nodes in reverse topological order: each once, after all its consumers."
    assert order.hint.startswith("Sort the graph topologically once, then walk it backwards")


@pytest.mark.parametrize("level, concept, words", [
    ("core", "no_such_concept", "check core.made_up: unknown concept 'no_such_concept': add it to "
                                "harness/data/concepts.yaml"),
    ("basics", "accumulation", "check core.made_up: unknown level 'basics'; one of core, followups, extensions"),
])
def test_check_refuses_an_unknown_level_or_concept(level, concept, words):
    before = len(registry._DECLARED)
    with pytest.raises(ValueError) as declared:
        check("core.made_up", level, concept)
    assert str(declared.value) == words
    assert len(registry._DECLARED) == before
    with pytest.raises(ValueError) as built:  # a spec case compiles into the same type, with the same refusal
        Check("core.made_up", level, concept, "title", None, frozenset(), 1.0, lambda ctx: None)
    assert str(built.value) == words


def test_a_check_declared_outside_the_listed_modules_is_refused(monkeypatch):
    def stray(ctx):
        """A check no module of the registry declares."""

    monkeypatch.setattr(registry, "_DECLARED", [*registered(), Check("core.stray", "core", "order", "t", None,
                                                                     frozenset(), 1.0, stray)])
    with pytest.raises(ValueError, match=f"checks declared in {__name__}: list the module"):
        registered()
