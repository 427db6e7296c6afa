"""A submission that searches its sandbox for the grader's own files (``sandbox/data/find_grader_files.py``),
and how to read what it found. Used against the checkout's sandbox (``sandbox/test_zone.py``) and an
installed grader's (``test_installed.py``)."""

from __future__ import annotations

import json
from pathlib import Path

SEARCHER = Path(__file__).parent / "sandbox" / "data" / "find_grader_files.py"
SECRETS = ("reference/engine.py", "harness/diagnosis/mutants.py", "harness/diagnosis/catalogue.py",
           "harness/data/rubric.yaml", "candidate_template/solution.py")
"""Files of the grader no submission may read: the model answer, the bug catalogue and its mutants,
the rubric, the template (which gives nothing away, but is no worker's business either)."""


def searcher(folder: Path, targets: list[str]) -> Path:
    """The searching submission, written into ``folder``, told to try reading each of ``targets``."""
    text = SEARCHER.read_text().replace("TARGETS: list = []", f"TARGETS: list = {targets!r}")
    path = folder / "searcher.py"
    path.write_text(text)
    return path


def said(output: str) -> dict:
    """The search's report: the last line of its output that is one."""
    for line in reversed(output.strip().splitlines()):
        if line.startswith('{"grader"'):
            return json.loads(line)
    raise AssertionError(f"the searcher reported nothing: {output[-2000:]!r}")


def grader_files_found(report: dict, zone: set[str]) -> list[str]:
    """What a search's report shows of the grader beyond its zone: files under ``/grader`` that are not
    the zone's, the grader's files elsewhere, and the secrets some route could read."""
    return ([f"/grader/{path}" for path in report["grader"] if path not in zone] + report["found"]
            + [f"{target} (by {route})" for target, route in report["read"]])
