"""The interviewer's layer on a real batch of a dozen: a decision recorded with `grade batch decide` shows in
every export, `--resume --only` regrades one candidate and keeps it, and the page fits a 1,400 px window in
headless chromium."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "tests" / "solutions"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FAST = ("--level", "core", "--max-examples", "5", "--allow-basic-isolation")
COHORT = {
    "good_full": "full_correct.py", "good_core": "correct_core.py", "lookalike": "legit_lookalikes.py",
    "bug_overwrite_grad": "overwrite_grad.py", "bug_flipped_transpose": "flipped_transpose.py",
    "bug_wrong_operand": "wrong_operand_mul.py", "bug_sum_not_expanded": "sum_not_expanded.py",
    "bug_relu_at_zero": "relu_grad_at_zero.py", "bug_no_topological_order": "bfs_no_topo.py",
    "cheat_autograd": "cheat_autograd_grad.py", "copy_of_good_core": "correct_core.py",
}
BECAUSE, COMMENT = "explained the fix aloud", "knew accumulation once asked"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    subs = tmp_path_factory.mktemp("cohort") / "subs"
    subs.mkdir()
    for sid, name in COHORT.items():
        shutil.copy(SOLUTIONS / name, subs / f"{sid}.py")
    (subs / "broken_file.py").write_text("class Tensor(:\n    pass\n")
    out = subs.parent / "out"
    result = invoke("batch", subs, "-o", out, *FAST, "-j", "2", "--gradescope")
    assert result.exit_code == 0, result.output
    return subs, out


def _gradebook(out: Path) -> dict[str, dict[str, str]]:
    return {row["candidate"]: row for row in csv.DictReader(io.StringIO((out / "gradebook.csv").read_text()))}


def test_a_decision_shows_everywhere_and_survives_a_regrade_of_another(batch):
    subs, out = batch
    result = invoke("batch", "decide", out, "bug_overwrite_grad", "--score", "40", "--because", BECAUSE,
                    "--comment", COMMENT)
    assert result.exit_code == 0, result.output
    book = _gradebook(out)
    assert sorted(book) == sorted([*COHORT, "broken_file"])
    row = book["bug_overwrite_grad"]
    automatic = json.loads((out / "results" / "bug_overwrite_grad.json").read_text())["score"]
    assert (row["final_score"], row["comment"], row["automatic_score"]) == ("40.0", COMMENT, str(float(automatic)))
    assert automatic < 40  # the overwrite fails the accumulation checks
    summary_csv = {r["id"]: r for r in csv.DictReader(io.StringIO((out / "summary.csv").read_text()))}
    assert summary_csv["bug_overwrite_grad"]["comment"] == COMMENT
    assert COMMENT in (out / "report.html").read_text()
    assert json.loads((out / "gradescope" / "bug_overwrite_grad" / "results.json").read_text())["score"] == 40.0

    result = invoke("batch", subs, "-o", out, *FAST, "--resume", "--only", "good_full")
    assert result.exit_code == 0, result.output
    assert "graded 12 submissions (11 from an earlier run)" in result.stdout
    row = _gradebook(out)["bug_overwrite_grad"]
    assert (row["final_score"], row["comment"]) == ("40.0", COMMENT)
    assert json.loads((out / "decisions.json").read_text())["decisions"]["bug_overwrite_grad"]["score"] == 40.0


def test_the_cohort_page_fits_a_window_1400_pixels_wide(batch):
    _, out = batch
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        problems = []
        page.on("console", lambda msg: problems.append(msg.text) if msg.type in ("error", "warning") else None)
        page.goto((out / "report.html").as_uri())
        for details in page.locator("details").all():
            details.evaluate("d => d.open = true")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400
        assert page.evaluate("""Array.from(document.querySelectorAll('body *')).filter(el =>
            ['auto', 'scroll'].includes(getComputedStyle(el).overflowX) && el.scrollWidth > el.clientWidth).length""") == 0
        # the copy and its original, side by side with the shared code marked on both sides
        assert page.locator("#pair-0 .sides mark").count() >= 2
        assert problems == []
        browser.close()
