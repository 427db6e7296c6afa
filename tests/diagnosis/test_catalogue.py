"""The catalogue as data, and its mutants: every bug fully described, every patch still applies."""

from __future__ import annotations

import re

import pytest

from harness.checks.registry import registered
from harness.diagnosis import mutants
from harness.diagnosis.catalogue import BUGS, INTEGRITY, bug
from harness.diagnosis.mutants import MUTANTS, MutantError, load_mutant, mutant_source, reference_source
from harness.grade import GradeOptions, planned_checks
from harness.ops import LEVELS
from harness.specs import CONCEPTS

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")


def test_the_catalogue_has_the_classic_bugs():
    assert len(BUGS) >= 20
    assert len({b.id for b in BUGS}) == len(BUGS)
    assert len({b.name for b in BUGS}) == len(BUGS)
    with pytest.raises(KeyError):
        bug("no_such_bug")


@pytest.mark.parametrize("b", BUGS, ids=lambda b: b.id)
def test_each_bug_is_described(b):
    assert re.fullmatch(r"[a-z][a-z_]*", b.id)
    assert b.level in LEVELS
    assert b.concept in set(CONCEPTS) | {c.concept for c in registered()}
    assert 0 < len(b.name) <= 60 and b.name[0].islower()
    sentences = SENTENCE_END.split(b.explanation)
    assert len(sentences) == 2 and all(s.endswith(".") for s in sentences), sentences
    assert b.hint[-1] in ".?" and len(b.hint) > 40


@pytest.mark.parametrize("b", BUGS, ids=lambda b: b.id)
def test_each_signature_names_a_check_and_compiles(b):
    planned = {c.id for c in planned_checks(GradeOptions())}
    for check_id, pattern in b.signatures:
        assert check_id == INTEGRITY or check_id in planned
        re.compile(pattern)


def test_every_bug_has_one_mutant():
    assert set(MUTANTS) == {b.id for b in BUGS}


@pytest.mark.parametrize("b", BUGS, ids=lambda b: b.id)
def test_each_mutant_is_the_reference_with_its_patches(b):
    reference = reference_source()
    for variant in range(1 + len(MUTANTS[b.id].variants)):
        source = mutant_source(b.id, variant)
        assert source != reference and source.startswith(f"# Mutant {b.id}: ")
        assert "# BUG" in source
        module = load_mutant(b.id, variant)
        assert hasattr(module, "Tensor") and hasattr(module, "no_grad")


def test_a_patch_that_no_longer_applies_fails_loudly(monkeypatch):
    monkeypatch.setattr(mutants, "reference_source", lambda: "class Tensor:\n    pass\n")
    mutant_source.cache_clear()
    try:
        with pytest.raises(MutantError) as raised:
            mutant_source("overwrite")
    finally:
        monkeypatch.undo()
        mutant_source.cache_clear()
    assert str(raised.value) == ("mutant overwrite: the text to patch occurs 0 times in reference/engine.py, "
                                 "expected once: 'grads[key] = grads[key] + pg if key in grads else pg'")


def test_the_readme_lists_the_catalogue():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for b in BUGS:
        assert f"| `{b.id}` | {b.name} | {b.level} | {b.concept} |" in readme, b.id
