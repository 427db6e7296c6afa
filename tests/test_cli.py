"""The command line: options reach the grader, reports are rendered, exit codes follow the contract."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import harness.grade
from harness.cli import main
from harness.report.model import CheckResult, Report

ROOT = Path(__file__).resolve().parent.parent


def _report(outcome: str = "passed", status: str = "graded") -> Report:
    check = CheckResult("core.accumulation", "core", "accumulation", "reuse accumulates", outcome,
                        "" if outcome == "passed" else "a.grad differs", 10.0 if outcome == "passed" else 0.0, 10.0)
    return Report(file="s.py", status=status, score=check.points, max_score=10.0,
                  levels={"core": {"score": check.points, "max_score": 10.0}}, checks=(check,),
                  integrity_violations=("line 3: uses torch.autograd",) if status == "integrity_violation" else ())


@pytest.fixture
def invoke():
    runner = CliRunner()

    def run(*args: str):
        return runner.invoke(main, [str(a) for a in args], catch_exceptions=False)

    return run


@pytest.fixture
def submission(tmp_path):
    path = tmp_path / "s.py"
    path.write_text("class Tensor: pass\n")
    return path


@pytest.mark.parametrize("outcome, status, code", [
    ("passed", "graded", 0), ("failed", "graded", 1), ("error", "graded", 1), ("timeout", "graded", 1),
    ("not_attempted", "graded", 0), ("passed", "error", 3), ("passed", "timeout", 3),
    ("passed", "integrity_violation", 4),
])
def test_exit_code_follows_the_report(monkeypatch, invoke, submission, outcome, status, code):
    monkeypatch.setattr(harness.grade, "grade_submission", lambda submission, options, sandbox: _report(outcome, status))
    assert invoke(submission, "--format", "json").exit_code == code


def test_options_reach_the_grader(monkeypatch, invoke, submission, tmp_path):
    seen = {}

    def fake(submission, options, sandbox):
        seen.update(path=submission.path, options=options)
        return _report()

    monkeypatch.setattr(harness.grade, "grade_submission", fake)
    specs = tmp_path / "specs"
    specs.mkdir()
    # A class the source does not define is refused from the source alone: this one defines Value.
    submission.write_text(submission.read_text() + "\n\nValue = Tensor\n")
    result = invoke(submission, "--level", "core", "--seed", "7", "--class-name", "Value", "--specs", specs,
                    "--max-examples", "30")
    assert result.exit_code == 0
    options = seen["options"]
    assert (seen["path"], options.level, options.seed, options.class_name, options.specs, options.max_examples) == (
        submission, "core", 7, "Value", (specs,), 30)


def test_the_file_is_read_once_and_that_reading_is_graded(monkeypatch, invoke, submission):
    reads, graded = [], []
    real = harness.grade.read_submission
    monkeypatch.setattr(harness.grade, "read_submission", lambda *a, **k: reads.append(a) or real(*a, **k))
    monkeypatch.setattr(harness.grade, "grade_submission",
                        lambda sub, options, sandbox: graded.append(sub) or _report())
    assert invoke(submission, "--format", "json").exit_code == 0
    assert len(reads) == 1
    assert [(s.path, s.text) for s in graded] == [(submission, "class Tensor: pass\n")]


def test_json_has_the_contract_fields(monkeypatch, invoke, submission):
    monkeypatch.setattr(harness.grade, "grade_submission", lambda submission, options, sandbox: _report("failed"))
    data = json.loads(invoke(submission, "--format", "json").stdout)
    assert {"status", "score", "max_score", "levels", "checks", "integrity"} <= set(data)
    assert set(data["checks"][0]) >= {"id", "level", "concept", "outcome", "points", "max_points", "message"}
    assert data["integrity"] == {"violations": [], "review": []}
    assert {"root_causes", "isolation", "source_sha256", "candidate_text"} <= set(data)
    assert data["checks"][0]["diagnosis"] == []


def test_text_report_ends_with_the_scores(monkeypatch, invoke, submission):
    monkeypatch.setattr(harness.grade, "grade_submission", lambda submission, options, sandbox: _report("failed"))
    lines = invoke(submission).stdout.splitlines()
    assert "FAIL core.accumulation" in "\n".join(lines)
    assert lines[-1].startswith("score 0.0/10.0  [graded]")


def test_markdown_report_is_a_table(monkeypatch, invoke, submission):
    monkeypatch.setattr(harness.grade, "grade_submission", lambda submission, options, sandbox: _report("failed"))
    out = invoke(submission, "--format", "markdown").stdout
    assert "| core | `core.accumulation` | failed | 0.0/10.0 | a.grad differs |" in out


def test_format_md_is_markdown(monkeypatch, invoke, submission):
    monkeypatch.setattr(harness.grade, "grade_submission", lambda submission, options, sandbox: _report("failed"))
    result = invoke(submission, "--format", "md")
    assert result.exit_code == 1 and result.stdout.startswith("## Autograd grade: ")


def test_a_usage_error_names_only_what_the_user_types(submission):
    result = CliRunner().invoke(main, [str(submission), "--format", "pdf"], prog_name="grade")
    assert result.exit_code == 2
    assert result.stderr.startswith("Usage: grade FILE [OPTIONS]\nTry 'grade FILE --help' for help.\n")
    assert "grade file" not in result.stderr


@pytest.mark.slow
def test_a_file_whose_one_engine_class_is_value_is_graded_and_the_report_says_so(invoke, tmp_path, monkeypatch):
    import re

    monkeypatch.setenv("COLUMNS", "120")  # the note on one line, whatever width the test runner has

    path = tmp_path / "value.py"
    path.write_text(re.sub(r"\bTensor\b", "Value", (ROOT / "tests" / "solutions" / "correct_core.py").read_text()))
    result = invoke(path, "--level", "core", "--max-examples", "10")
    assert result.exit_code == 0, result.stdout[-2000:]
    header = result.stdout.split("\n\n")[0]  # the first lines, up to the first blank one
    # the note is the header's last line (the lines above wrap a long temporary path at the report's width)
    assert header.splitlines()[-1] == "  graded the class Value: the file defines no Tensor (--class-name chooses another)"
    chosen = invoke(path, "--level", "core", "--class-name", "Tensor", "--format", "json")
    assert chosen.exit_code == 3  # --class-name still chooses
    assert json.loads(chosen.stdout)["message"].endswith("did you mean --class-name Value?")


def test_a_missing_file_is_a_usage_error(invoke, tmp_path):
    result = invoke(tmp_path / "nope.py")
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path / 'nope.py'}: no such file\n"


def test_a_bad_rubric_is_a_one_line_error(invoke, submission, tmp_path):
    rubric = tmp_path / "rubric.yaml"
    rubric.write_text("levels: {core: 10}\nbonus: 3\n")
    result = invoke(submission, "--rubric", rubric)
    assert result.exit_code == 2
    assert result.stderr == (f"error: {rubric}: unknown key 'bonus' (allowed: levels, weights, interview_bar, gates, agreements)\n")


def test_init_writes_the_template_once(invoke, tmp_path):
    target = tmp_path / "solution.py"
    first = invoke("init", target)
    assert first.exit_code == 0 and target.read_text().startswith('"""')
    second = invoke("init", target)
    assert second.exit_code == 2
    assert second.stderr == f"error: {target}: already exists; not overwriting it\n"


def test_grading_the_reference_core_for_real(invoke):
    result = invoke(ROOT / "reference" / "engine.py", "--level", "core", "--format", "json", "--max-examples", "25")
    data = json.loads(result.stdout)
    assert result.exit_code == 0, [c for c in data["checks"] if c["outcome"] != "passed"]
    assert data["status"] == "graded"
    assert data["score"] == data["max_score"] == data["levels"]["core"]["max_score"]
    assert data["interview"]["passed"] is True


def test_an_invalid_spec_folder_is_a_one_line_error(invoke, submission, tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "bad.yaml").write_text("- id: a\n  title: t\n  level: core\n  concepts: [order]\n"
                                    "  inputs: {x: {value: 1.0}}\n  output: \"x.nope()\"\n")
    result = invoke(submission, "--specs", specs)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {specs / 'bad.yaml'}:6:")
    assert len(result.stderr.splitlines()) == 1


def test_specs_add_to_the_shipped_library_and_only_specs_replace_it(monkeypatch, invoke, submission, tmp_path):
    seen = []
    monkeypatch.setattr(harness.grade, "grade_submission", lambda submission, options, sandbox: seen.append(options) or _report())
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "a.yaml").write_text("[]\n")
    invoke(submission, "--specs", folder)
    invoke(submission, "--only-specs", folder)
    assert [(o.specs, o.replace_specs) for o in seen] == [((folder,), False), ((folder,), True)]
    both = invoke(submission, "--specs", folder, "--only-specs", folder)
    assert both.exit_code == 2
    assert both.stderr == "error: --specs adds to the shipped library and --only-specs replaces it: use one of them\n"


def test_an_empty_spec_folder_is_an_error(invoke, submission, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke(submission, "--specs", empty)
    assert result.exit_code == 2
    assert result.stderr == f"error: {empty}: no spec files (*.yaml) in this folder\n"


# ---- what the source alone decides, fast, and without litter ---------------------------------------


def _run_grade(args: list[str], cwd: Path):
    import subprocess
    import sys
    import time

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "harness.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    return done, time.monotonic() - started


def test_a_syntax_error_is_reported_from_the_source_with_its_line(tmp_path):
    path = tmp_path / "solution.py"
    path.write_text("class Tensor:\n    def f(self:\n        pass\n")
    done, seconds = _run_grade([path, "--format", "json"], tmp_path)
    assert done.returncode == 3
    report = json.loads(done.stdout)
    assert report["status"] == "error"
    assert report["message"].startswith("SyntaxError at line 2, column 10: '(' was never closed")
    assert seconds < 5  # no torch, no sandbox: well under a second on an idle machine


def test_a_file_that_is_not_python_is_bad_input(tmp_path):
    binary = tmp_path / "solution.py"
    binary.write_bytes(b"\x7fELF\x00\x01")
    prose = tmp_path / "notes.txt"
    prose.write_text("my answer is below\n")
    for path, why in ((binary, "it is binary or not UTF-8 text"), (prose, "invalid syntax at line 1")):
        done, _ = _run_grade([path], tmp_path)
        assert (done.returncode, done.stderr) == (2, f"error: {path}: not a Python source file ({why})\n")


def test_an_empty_file_cannot_be_graded(tmp_path):
    path = tmp_path / "solution.py"
    path.write_text("\n")
    done, _ = _run_grade([path, "--format", "json"], tmp_path)
    assert done.returncode == 3
    assert json.loads(done.stdout)["message"] == "the submission is empty: it defines no class named 'Tensor'"


def test_grading_writes_nothing_into_the_working_folder(tmp_path):
    path = tmp_path / "solution.py"
    path.write_text((ROOT / "tests" / "solutions" / "overwrite_grad.py").read_text())
    done, _ = _run_grade([path.name, "--level", "core", "--max-examples", "20"], tmp_path)
    assert done.returncode == 1, done.stderr[-1000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["solution.py"]


@pytest.mark.slow
def test_a_report_of_two_bugs_and_a_stub_fits_an_80_by_40_screen(tmp_path):
    import os

    source = (ROOT / "tests" / "corpus" / "bugs" / "overwrite_closures.py").read_text()
    buggy = source.replace("lambda g: (g @ b.T, a.T @ g)", "lambda g: (g @ b, a.T @ g)").replace(
        "        return self._make(x.clamp(min=0), (self,), lambda g: (g * (x > 0),))", "        raise NotImplementedError")
    assert buggy.count("raise NotImplementedError") == 1 and "(g @ b, a.T @ g)" in buggy
    path = tmp_path / "solution.py"
    path.write_text(buggy)
    env = {**os.environ, "COLUMNS": "80"}
    env.pop("LINES", None)
    import subprocess
    import sys

    # As a candidate runs it, from the folder of the file.
    done = subprocess.run([sys.executable, "-m", "harness.cli", path.name, "--max-examples", "20"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 1, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) <= 40
    code = False
    for line in lines:  # snippet code (below 'reproduce:') is never wrapped; every other line fits
        if line.strip() == "reproduce:":
            code = True
        elif code and line and not line.startswith("       "):
            code = False
        if not code:
            assert len(line) <= 80, line
    assert "Fix first" in lines and lines.count("     reproduce:") == 1
    assert sum(line.startswith(("core ", "followups ", "extensions ")) for line in lines) == 3
