"""The buggy solutions corpus: each engine's first root cause names the bug planted in it.

The files in ``tests/corpus/bugs/`` (and a few of ``tests/solutions/``) are written the way
candidates write engines, not generated from the mutants; ``manifest.yaml`` names each
file's bug. Graded at the levels up to the bug's own, as a candidate practising them would.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.diagnosis.catalogue import BUGS, bug
from harness.grade import GradeOptions, grade
from harness.ops import LEVELS
from harness.report.render import render_text
from harness.sandbox.launch import Launcher

pytestmark = pytest.mark.slow

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "bugs"
ENTRIES = yaml.safe_load((CORPUS / "manifest.yaml").read_text())


def test_the_manifest_lists_every_file_and_covers_the_catalogue():
    assert ENTRIES, "the manifest lists no files"
    listed = {(CORPUS / e["file"]).resolve() for e in ENTRIES}
    assert set(CORPUS.glob("*.py")) <= {p for p in listed}, "corpus files missing from the manifest"
    assert all(p.is_file() for p in listed), "manifest entries without a file"
    assert {e["bug"] for e in ENTRIES} == {b.id for b in BUGS}, "every catalogued bug has a file"


@pytest.fixture(scope="module")
def sandbox():
    # One launcher imports torch once; each file still gets a fresh sandbox of its own.
    with Launcher() as box:
        yield box


@pytest.mark.parametrize("entry", ENTRIES, ids=[Path(e["file"]).stem for e in ENTRIES])
def test_first_root_cause_is_the_planted_bug(entry, sandbox, reads_back):
    planted = bug(entry["bug"])
    levels = LEVELS[: LEVELS.index(planted.level) + 1]
    report = reads_back(grade(CORPUS / entry["file"], GradeOptions(levels=levels, max_examples=30), sandbox))
    causes = [cause.bug for cause in report.root_causes]
    assert causes and causes[0] == planted.id, f"root causes: {causes}"
    explained = report.root_causes[0].checks
    for check in report.checks:
        if check.id in explained:
            assert check.diagnosis[0] == planted.id, check.id
    # And the candidate's report fits on a screen.
    text = render_text(report)
    assert len(text.splitlines()) < 150 and len(text.encode()) < 20_000, (len(text.splitlines()), len(text.encode()))
