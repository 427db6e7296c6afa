"""`grade batch decide` and `--resume --only`, with the runner's stand-in grader (``score = N`` in a file is its
score out of 10): a decision reaches every export, survives a resume, is shown as made for an older version once
the source changes, and a decisions file that cannot be trusted is a one-line error naming it."""

from __future__ import annotations

import csv
import io
import json
import os

import pytest
from test_runner import fake, invoke, subs  # noqa: F401  (fixtures)

from harness.batch.decisions import MAX_BYTES

BECAUSE, COMMENT = "explained the fix aloud", "knew accumulation once asked"


@pytest.fixture
def out(fake, subs, tmp_path):  # noqa: F811
    folder = tmp_path / "out"
    assert invoke(subs, "-o", folder, "--level", "core", "--gradescope").exit_code == 0
    return folder


def decide(*args):
    return invoke("decide", *args)


def gradebook(out):
    return {row["candidate"]: row for row in csv.DictReader(io.StringIO((out / "gradebook.csv").read_text()))}


def test_a_decision_reaches_every_export(out):
    result = decide(out, "bo", "--score", "4", "--because", BECAUSE, "--comment", COMMENT, "--by", "ann")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (f"final score 4.0 of 10.0, interview bar not passed; every export in "
                                              f"{out} written again")
    record = json.loads((out / "decisions.json").read_text())["decisions"]["bo"]
    bo = json.loads((out / "results" / "bo.json").read_text())
    assert (record["score"], record["because"], record["comment"], record["by"]) == (4.0, BECAUSE, COMMENT, "ann")
    assert (record["automatic_score"], record["source_sha256"]) == (3.0, bo["source_sha256"])
    assert record["decided_at"].endswith("+00:00") and record["history"] == []
    assert bo["score"] == 3.0  # the grader's result itself is never changed
    # gradebook.csv: a row per candidate; bo's final score beside the comment
    book = gradebook(out)
    assert sorted(book) == ["ann", "bo", "cy"]
    assert (book["bo"]["final_score"], book["bo"]["automatic_score"], book["bo"]["comment"]) == ("4.0", "3.0", COMMENT)
    assert book["ann"]["final_score"] == "9.0" and book["ann"]["decision"] == ""
    rows = {row["id"]: row for row in csv.DictReader(io.StringIO((out / "summary.csv").read_text()))}
    assert (rows["bo"]["final_score"], rows["bo"]["score"], rows["bo"]["comment"]) == ("4.0", "3.0", COMMENT)
    summary = json.loads((out / "summary.json").read_text())
    row = next(r for r in summary["submissions"] if r["id"] == "bo")
    assert (row["final_score"], row["automatic_score"], row["comment"]) == (4.0, 3.0, COMMENT)
    assert row["decision"]["applied"] and summary["counts"]["decided"] == 1
    page = (out / "report.html").read_text()
    assert COMMENT in page and "score set to 4.0 (automatic 3.0)" in page
    assert json.loads((out / "gradescope" / "bo" / "results.json").read_text())["score"] == 4.0
    feedback = (out / "feedback" / "bo.md").read_text()
    assert "Final score: 4.0 of 10.0" in feedback and COMMENT not in feedback and BECAUSE not in feedback


def test_a_second_decision_keeps_what_it_does_not_change_and_the_history(out):
    assert decide(out, "bo", "--comment", "first look").exit_code == 0
    assert decide(out, "bo", "--score", "5", "--because", BECAUSE).exit_code == 0
    record = json.loads((out / "decisions.json").read_text())["decisions"]["bo"]
    assert (record["score"], record["comment"]) == (5.0, "first look")
    assert [entry["comment"] for entry in record["history"]] == ["first look"]
    assert decide(out, "bo", "--clear").exit_code == 0
    assert gradebook(out)["bo"]["final_score"] == "3.0" and gradebook(out)["bo"]["decision"] == ""
    assert len(json.loads((out / "decisions.json").read_text())["decisions"]["bo"]["history"]) == 2


def test_resume_only_regrades_the_named_and_keeps_every_decision(fake, subs, out):  # noqa: F811
    calls, _ = fake
    assert decide(out, "bo", "--score", "4", "--because", BECAUSE, "--comment", COMMENT).exit_code == 0
    (subs / "ann.py").write_text("score = 2\n")  # changed, but not named: kept as graded before
    calls.clear()
    result = invoke(subs, "-o", out, "--level", "core", "--resume", "--only", "bo")
    assert result.exit_code == 0, result.output
    assert calls == ["bo.py"]
    assert ("note: kept the earlier results of ann though their source changed since (--only): run --resume "
            "without --only to grade them again") in result.stderr
    book = gradebook(out)
    assert (book["bo"]["final_score"], book["bo"]["comment"]) == ("4.0", COMMENT)
    assert book["ann"]["final_score"] == "9.0"
    assert "bo" in json.loads((out / "decisions.json").read_text())["decisions"]


def test_a_decision_for_an_older_source_is_shown_and_not_applied(fake, subs, out):  # noqa: F811
    assert decide(out, "bo", "--score", "4", "--because", BECAUSE, "--comment", COMMENT).exit_code == 0
    (subs / "bo.py").write_text("score = 6\n")
    assert invoke(subs, "-o", out, "--level", "core", "--resume").exit_code == 0
    book = gradebook(out)
    assert book["bo"]["final_score"] == "6.0"
    assert book["bo"]["decision"].startswith("made for an older version of the source (")
    assert "older version" in (out / "report.html").read_text()


@pytest.mark.parametrize("args, message", [
    (("nobody", "--comment", "x"), "no candidate 'nobody' in {out} (candidates: ann, bo, cy)"),
    (("boo", "--comment", "x"), "no candidate 'boo' in {out} (did you mean bo? candidates: ann, bo, cy)"),
    (("bo", "--score", "4"), "--score needs --because: why it is set by hand"),
    (("bo", "--score", "11", "--because", "b"), "--score 11: more than the maximum of 10"),
    (("bo",), "nothing to record: give --score with --because, --accept-review, --bar, --comment or --clear"),
    (("bo", "--accept-review"), "bo has no integrity review entries to accept"),
    (("bo", "--clear", "--comment", "x"), "--clear takes the decision back: give it alone"),
    (("bo", "--because", "b"), "--because gives the reason for --score, --bar or --accept-review"),
])
def test_a_decision_that_cannot_be_made_is_a_one_line_error(out, args, message):
    result = decide(out, *args)
    assert result.exit_code == 2
    assert result.stderr == f"error: {message.format(out=out)}\n"
    assert not (out / "decisions.json").exists()


def test_decide_needs_a_batch_folder(tmp_path):
    result = decide(tmp_path, "bo", "--comment", "x")
    assert (result.exit_code, result.stderr) == (2, f"error: {tmp_path}: not the output folder of a batch (no "
                                                    "summary.json and results/ in it)\n")


@pytest.mark.parametrize("content, message", [
    ('{"version": 1, "decisions": {', "{path}:1:30: not valid JSON: Expecting property name enclosed in double quotes"),
    ("[1, 2]", '{path}: the file: must be an object {{"version": 1, "decisions": {{...}}}}'),
    ('{"version": 2, "decisions": {}}', "{path}: version: must be 1, got 2"),
    ('{"version": 1, "decisions": {}, "extra": 1}', "{path}: key 'extra': unknown; allowed: version, decisions"),
    ('{"version": 1, "decisions": {"bo": {"decided_at": "t", "by": "a", "source_sha256": "", "automatic_score": 1, '
     '"max_score": 10, "score": "forty"}}}', "{path}: decisions['bo'].score: must be a number of points (0 or more), "
                                            "got 'forty'"),
    ('{"version": 1, "decisions": {"bo": {"decided_at": "t", "by": "a", "source_sha256": "", "automatic_score": 1, '
     '"max_score": 10, "score": NaN}}}', "{path}: not valid JSON: NaN is not a number JSON allows"),
    ('{"version": 1, "decisions": {"bo": {"by": "a"}}}', "{path}: decisions['bo']: decided_at is missing"),
    ("[" * 100_000 + "]" * 100_000, "{path}: not valid JSON: maximum recursion depth exceeded while decoding a "
                                    "JSON array from a unicode string"),
])
def test_a_decisions_file_that_cannot_be_trusted_is_refused_naming_it(fake, subs, out, content, message):  # noqa: F811
    calls, _ = fake
    path = out / "decisions.json"
    path.write_text(content)
    expected = f"error: {message.format(path=path)}\n"
    assert (decide(out, "bo", "--comment", "x").stderr, decide(out, "bo", "--comment", "x").exit_code) == (expected, 2)
    calls.clear()
    result = invoke(subs, "-o", out, "--level", "core", "--resume")
    assert (result.exit_code, result.stderr) == (2, expected)
    assert calls == []  # refused before any grading
    assert path.read_text() == content


def test_a_decisions_file_too_large_or_a_link_is_never_read(out, tmp_path):
    path = out / "decisions.json"
    with open(path, "wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: no disk used
    assert decide(out, "bo", "--comment", "x").stderr == (
        f"error: {path}: {MAX_BYTES + 1:,} bytes, more than the {MAX_BYTES:,} a decisions file may hold\n")
    path.unlink()
    secret = tmp_path / "secret.json"
    secret.write_text('{"version": 1, "decisions": {}}')
    os.symlink(secret, path)
    assert decide(out, "bo", "--comment", "x").stderr == (
        f"error: {path}: not a regular file (a link, a folder or a device is never read)\n")


def test_only_is_refused_where_it_would_mix_two_gradings(fake, subs, out):  # noqa: F811
    calls, _ = fake
    calls.clear()
    result = invoke(subs, "-o", out, "--level", "core", "--only", "bo")
    assert (result.exit_code, result.stderr) == (2, "error: --only regrades candidates of an earlier run: add "
                                                    "--resume\n")
    result = invoke(subs, "-o", out, "--level", "core", "--resume", "--only", "nobody")
    assert (result.exit_code, result.stderr) == (2, "error: --only nobody: no such candidate in the batch "
                                                    "(candidates: ann, bo, cy)\n")
    result = invoke(subs, "-o", out, "--level", "core", "--resume", "--only", "bo", "--seed", "4")
    assert result.exit_code == 2
    assert result.stderr == ("error: --only keeps the other candidates' results, but the grading settings changed "
                             "since the earlier run (seed 0 -> 4): run --resume without --only to grade everyone "
                             "again\n")
    assert calls == []
    assert json.loads((out / "settings.json").read_text())["seed"] == 0


def _with_review_entry(out, sid):
    """The result of ``sid`` as a grade that found a line for a person to read (its bar held until then)."""
    path = out / "results" / f"{sid}.json"
    report = json.loads(path.read_text())
    report["integrity"]["review"] = [{"line": 3, "construct": "import threading", "why": "a thread"}]
    report["interview"].update(passed=False, needs_review=True)
    path.write_text(json.dumps(report))


def test_accepting_the_review_lets_the_bar_follow_the_score(out):
    _with_review_entry(out, "cy")
    result = decide(out, "cy", "--bar", "passed", "--because", "the panel's call")
    assert (result.exit_code, result.stderr) == (2, "error: cy has integrity review entries nobody has accepted: "
                                                    "read them, then add --accept-review\n")
    result = decide(out, "cy", "--accept-review", "--because", "threads only in a test helper")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1].startswith("final score 10.0 of 10.0, interview bar passed")
    assert gradebook(out)["cy"]["interview_bar"] == "passed"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["needs_review"] == 0
    # then the bar may be decided by hand too: the review entries were read
    assert decide(out, "cy", "--bar", "not-passed", "--because", "the panel's call").exit_code == 0
    assert gradebook(out)["cy"]["interview_bar"] == "not passed"
