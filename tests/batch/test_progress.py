"""The progress display: plain lines when piped, a redrawn line on a terminal, nothing that steers it."""

import io

from harness.batch.progress import Progress
from harness.report.model import Interview, Report, ReviewEntry


def _report(status="graded", score=6.0, passed=True, review=(), message=""):
    return Report(file="s.py", status=status, score=score, max_score=10.0, levels={}, checks=(), message=message,
                  interview=Interview(passed=passed, bar=8.0, core_score=score, needs_review=bool(review)),
                  integrity_review=tuple(review))


def test_piped_one_line_per_submission():
    out = io.StringIO()
    progress = Progress(3, stream=out, live=False)
    progress.finished("ann", _report())
    progress.finished("bo", _report("error", 0.0, False, message="importing raised \x1b[2J\x07boom\nsecond line"))
    progress.finished("cy", _report(review=[ReviewEntry(3, "c", "w")]))
    progress.close()
    assert out.getvalue().splitlines() == [
        "[1/3] ann: graded, 6/10, interview passed",
        "[2/3] bo: error, 0/10, interview not passed: importing raised ?[2J?boom",
        "[3/3] cy: graded, 6/10, interview passed, 1 review flags",
    ]


def test_the_status_line_counts_failures_and_review_flags():
    out = io.StringIO()
    progress = Progress(4, stream=out, live=False)
    progress.reused(1)
    assert out.getvalue() == "[1/4] 1 kept from an earlier run\n"
    line = progress.line()
    assert line.startswith("[" + "#" * 6 + "." * 18 + "]") and "1/4" in line and "ETA --:--" in line
    progress.finished("a", _report("timeout", 0, False))
    progress.finished("b", _report(review=[ReviewEntry(1, "c", "w")]))
    line = progress.line()
    assert "3/4" in line and "failures 1" in line and "review 1" in line and "ETA --:--" not in line
    assert line.startswith("[" + "#" * 18 + "." * 6 + "]")


def test_on_a_terminal_the_line_is_redrawn():
    out = io.StringIO()
    progress = Progress(1, stream=out, live=True)
    progress.finished("a", _report())
    progress.close()
    text = out.getvalue()
    assert text.startswith("\r\x1b[K[") and text.endswith("1/1  elapsed 0:00  ETA 0:00  failures 0  review 0\n")
