"""Test settings shared by every test module.

Hypothesis runs under the "ci" profile: a fixed seed and no example database,
so a test run is reproducible and leaves nothing behind; no deadline, because
graph programs call into torch and a shared machine's timings vary.
"""

import json
from typing import Callable, Iterator

import pytest
from hypothesis import HealthCheck, settings

from harness.report.model import Report
from harness.sandbox.launch import Launcher

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")


LONGEST_FIRST = ("tests/diagnosis/test_foreign_corpus.py", "tests/diagnosis/test_blind_corpus.py",
                 "tests/diagnosis/test_audit.py", "tests/sandbox/test_layouts.py", "tests/checks/test_timing.py")
"""Files whose few tests grade whole corpora: run first, so the two processes of ``-n 2`` finish together
instead of one grading a corpus while the other has nothing left (``--no-loadscope-reorder`` keeps this order)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))



CORPUS_DEEP_CHAIN = 20_000
"""The deep-graph check's chain when a test grades a whole corpus (or the catalogue's mutants): still twenty
times any default recursion limit, and a fifth of the cost (the 100,000-node chain is most of a pure-Python engine's grade). Graded both
ways, the 46 foreign engines gave the same outcome on every check and the same first cause (but one engine
whose backward takes its order from a set, and differs from run to run either way): 145 s of grading at
100,000 nodes, 88 s at 20,000. ``benchmarks/fix_first_accuracy.py`` keeps the full chain."""


@pytest.fixture(scope="module")
def short_deep_chain() -> Iterator[None]:
    from harness.checks import targeted

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(targeted, "DEEP_CHAIN", CORPUS_DEEP_CHAIN)
        yield

@pytest.fixture(scope="session")
def launcher() -> Iterator[Launcher]:
    """One sandbox template for the whole run, as ``grade batch`` has one per batch.

    Each grade given it still runs in a fresh sandbox of its own (a fork of the template,
    which never runs a submission); only torch's import is shared. ``grade FILE``'s own
    start-up is tested by the command-line tests.
    """
    with Launcher("auto") as started:
        yield started


def assert_reads_back(report: Report) -> Report:
    """``report`` itself, after asserting that its JSON reads back (``Report.from_dict``) into a report
    whose JSON is the same, byte for byte: key order, rounding and every odd value included."""
    text = json.dumps(report.to_dict(), indent=2)
    again = json.dumps(Report.from_dict(json.loads(text)).to_dict(), indent=2)
    assert again == text, f"{report.file}: its JSON does not read back the same"
    return report


@pytest.fixture(scope="session")
def reads_back() -> Callable[[Report], Report]:
    """``assert_reads_back`` for the tests that grade a corpus: every report they make is read back too."""
    return assert_reads_back


@pytest.fixture(scope="session")
def built_grader():
    """(sdist, wheel) of the grader, built once per run with the standard frontend (``installing.build``)."""
    import shutil

    from installing import build, private_folder

    folder = private_folder("build")
    try:
        yield build(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
