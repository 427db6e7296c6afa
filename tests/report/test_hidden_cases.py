"""A hidden spec case graded for real: counted in the score, in the interviewer's JSON, and nowhere a candidate
reads (Gradescope shows it to no one, the feedback leaves it and its snippet out)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from harness.cli import main
from harness.report.feedback import render_feedback
from harness.report.gradescope import gradescope_results
from harness.report.model import Report

ROOT = Path(__file__).resolve().parents[2]
SECRET = """\
- id: secret.reuse
  title: "a case the candidate never sees"
  level: core
  concepts: [accumulation]
  hidden: true
  inputs:
    a: {value: 5.0}
  output: "a * a + a"
"""


def test_a_hidden_case_counts_and_the_candidate_never_sees_it(tmp_path):
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "secret.yaml").write_text(SECRET)
    engine = tmp_path / "solution.py"
    shutil.copy(ROOT / "tests" / "solutions" / "overwrite_grad.py", engine)
    done = CliRunner().invoke(main, ["file", str(engine), "--format", "json", "--level", "core", "--max-examples", "5",
                                     "--specs", str(tmp_path / "specs")], catch_exceptions=False)
    assert done.exit_code == 1, done.output
    report = Report.from_dict(json.loads(done.stdout))
    [secret] = [c for c in report.checks if c.id == "spec:secret.reuse"]
    assert (secret.hidden, secret.outcome) == (True, "failed")  # a * a + a: the overwrite keeps one contribution
    assert secret.max_points > 0 and not any(c.hidden for c in report.checks if c.id != secret.id)
    assert any("spec:secret.reuse" in cause.checks for cause in report.root_causes)  # the interviewer sees it all

    results = gradescope_results(report)
    [test] = [t for t in results["tests"] if t["name"].startswith("spec:secret.reuse")]
    assert test["visibility"] == "hidden" and results["score"] == round(report.score, 2)
    feedback = render_feedback(report)
    assert "secret" not in feedback and "secret" not in results["output"]
    assert secret.details["snippet"] not in feedback and secret.details["snippet"] not in results["output"]
    assert "core.accumulation" in feedback  # the rest is all there
