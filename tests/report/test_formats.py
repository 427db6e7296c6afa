"""Every format in the registry, rendered from one small hand-built report.

``CHECKED`` holds what each format must show; a format added to ``FORMATS`` without an entry
here fails ``test_every_format_is_checked``.
"""

import json

import pytest

from harness.report.files import SUFFIXES, write_formats
from harness.report.formats import FORMATS, render
from harness.report.model import CheckResult, Report

REPORT = Report(
    file="solution.py", status="graded", score=6.0, max_score=10.0,
    levels={"core": {"score": 6.0, "max_score": 10.0}},
    checks=(CheckResult("core.add", "core", "accumulation", "Addition has the right gradient.", "passed",
                        points=6.0, max_points=6.0),
            CheckResult("core.mul", "core", "accumulation", "Multiplication has the right gradient.", "failed",
                        "grad of a is wrong at [0, 1]", points=0.0, max_points=4.0)),
)


def _text(out: str) -> None:
    assert "core.mul" in out and "grad of a is wrong at [0, 1]" in out
    assert "6" in out and "10" in out


def _json(out: str) -> None:
    data = json.loads(out)
    assert [c["outcome"] for c in data["checks"]] == ["passed", "failed"]
    assert (data["score"], data["max_score"]) == (6.0, 10.0)


def _markdown(out: str) -> None:
    assert out.lstrip().startswith("#")
    assert "core.mul" in out and "|" in out


def _gradescope(out: str) -> None:
    data = json.loads(out)
    assert (data["score"], data["max_score"]) == (6.0, 10.0)
    assert [(t["name"].split(":")[0], t["status"], t["score"], t["max_score"]) for t in data["tests"]] == [
        ("core.add", "passed", 6.0, 6.0), ("core.mul", "failed", 0.0, 4.0)]
    assert data["tests"][1]["visibility"] == "hidden"  # the --visibility rule below


CHECKED = {"text": _text, "json": _json, "markdown": _markdown, "gradescope": _gradescope}


def test_every_format_is_checked():
    assert set(CHECKED) == set(FORMATS)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_format_renders_the_report(name):
    CHECKED[name](render(REPORT, name, visibility=(("core.mul", "hidden"),)))


def test_output_dir_writes_every_format_with_a_suffix(tmp_path):
    paths = write_formats(REPORT, tmp_path, "solution")
    assert sorted(p.name for p in paths) == ["solution.json", "solution.md", "solution.txt"]
    assert SUFFIXES == {"text": ".txt", "json": ".json", "markdown": ".md"}
    _json((tmp_path / "solution.json").read_text())
