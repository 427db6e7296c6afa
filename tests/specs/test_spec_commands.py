"""``grade spec check|new|fill``, driven through click's CliRunner."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
import yaml
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.cli import spec as spec_commands
from harness.specs.expressions import method_names
from harness.specs.text import MARKER, format_number
from harness.cli import main
from harness.compare import DEFAULT_TOLERANCE, compare
from harness.specs import load_cases

VALID = """\
- id: t.square
  title: "a * a"
  level: core
  concepts: [accumulation]
  inputs:
    a: {value: [1.0, 2.0]}
  output: (a * a).sum()
"""


def grade(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["spec", *map(str, args)])


def randn(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ---- check -----------------------------------------------------------------------------


def test_check_valid_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(VALID)
    (tmp_path / "b.yaml").write_text(VALID.replace("t.square", "t.other"))
    result = grade("check", tmp_path)
    assert (result.exit_code, result.output) == (0, "2 cases in 2 files: all valid\n")


def test_check_prints_one_line_per_error_and_the_count_last(tmp_path: Path) -> None:
    bad = VALID.replace("(a * a).sum()", "(a * a).softmax()") + VALID.replace("t.square", "t.two")
    (tmp_path / "a.yaml").write_text(bad)
    (tmp_path / "b.yaml").write_text(VALID.replace("level: core", "level: top").replace("t.square", "t.three"))
    result = grade("check", tmp_path / "a.yaml", tmp_path / "b.yaml")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"{tmp_path}/a.yaml:7:19: unknown method 'softmax'; known methods: {', '.join(method_names())}",
        f"{tmp_path}/b.yaml:3:10: unknown level 'top'; one of: core, followups, extensions",
        "2 errors in 3 cases in 2 files",
    ]


def test_check_finds_an_id_the_shipped_library_has_as_grading_would(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(VALID.replace("t.square", "core.reuse.square"))
    result = grade("check", tmp_path / "mine.yaml")
    assert result.exit_code == 1
    first = result.output.splitlines()[0]
    assert first.startswith(f"{tmp_path}/mine.yaml:1:7: id 'core.reuse.square' is already a case of the shipped "
                            "library (")
    assert first.endswith("): grading with --specs reads both, so choose another id (--only-specs reads yours alone)")
    # --only-specs reads them alone, as `grade FILE --only-specs` does: no clash.
    assert grade("check", "--only-specs", tmp_path / "mine.yaml").exit_code == 0
    # The library itself, or one of its files, never clashes with itself.
    assert grade("check", Path(spec_commands.DEFAULT_SPECS_DIR) / "core").exit_code == 0


def test_errors_are_wrapped_for_a_person_at_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setattr(spec_commands, "_at_terminal", lambda: True)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.yaml").write_text(VALID.replace("(a * a).sum()", "(a * a).tanhh()"))
    lines = grade("check", "a.yaml").output.splitlines()
    assert lines[0].startswith("a.yaml:7:19: ") and all(len(line) <= 60 for line in lines)
    assert lines[1].startswith("    ") and "(did you mean tanh?)" in " ".join(lines)


def test_check_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = grade("check", tmp_path / "nope")
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_check_folder_without_specs_fails(tmp_path: Path) -> None:
    result = grade("check", tmp_path)
    assert (result.exit_code, result.output) == (1, f"no spec files (*.yaml) in {tmp_path}\n")


def test_check_defaults_to_the_spec_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.yaml").write_text(VALID)
    monkeypatch.setattr(spec_commands, "DEFAULT_SPECS_DIR", tmp_path)
    result = grade("check")
    assert (result.exit_code, result.output) == (0, "1 case in 1 file: all valid\n")


def test_check_the_shipped_spec_library() -> None:
    result = grade("check")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1].endswith("all valid")


# ---- new -------------------------------------------------------------------------------


def test_new_prints_a_case_with_torch_expectations(tmp_path: Path) -> None:
    result = grade("new", "t.mlp", "--expr", "(x @ W).relu().sum()", "--input", "x=2x3", "--input", "W=3x4")
    assert result.exit_code == 0, result.output
    assert MARKER in result.output
    (case,) = yaml.safe_load(result.output)
    assert {k: case[k] for k in ("id", "title", "level", "concepts", "inputs", "output")} == {
        "id": "t.mlp",
        "title": "(x @ W).relu().sum()",
        "level": "core",
        "concepts": ["ops", "matmul", "routing", "shapes"],  # every op's: @ teaches matmul, relu routing
        "inputs": {"x": {"shape": [2, 3], "init": "randn", "seed": 0}, "W": {"shape": [3, 4], "init": "randn", "seed": 1}},
        "output": "(x @ W).relu().sum()",
    }
    # The oracle, computed here independently of the loader.
    x, W = randn((2, 3), 0).requires_grad_(), randn((3, 4), 1).requires_grad_()
    out = (x @ W).relu().sum()
    out.backward()
    written = case["expect"]
    assert compare(torch.tensor(written["output"]), out.detach(), DEFAULT_TOLERANCE, "output") is None
    assert compare(torch.tensor(written["grads"]["x"]), x.grad, DEFAULT_TOLERANCE, "x") is None
    assert compare(torch.tensor(written["grads"]["W"]), W.grad, DEFAULT_TOLERANCE, "W") is None
    path = tmp_path / "new.yaml"
    path.write_text(result.output)
    assert [c.id for c in load_cases([path])] == ["t.mlp"]


def test_new_with_int_input_upstream_steps_and_options(tmp_path: Path) -> None:
    result = grade(
        "new", "t.ce", "--expr", "h.cross_entropy(t) * 2", "--step", "h=x.tanh()", "--input", "x=4x3",
        "--int", "t=4:3", "--seed", "5", "--title", "cross-entropy of tanh", "--concept", "numerics",
        "--hint", "softmax minus one-hot",
    )
    assert result.exit_code == 0, result.output
    (case,) = yaml.safe_load(result.output)
    assert case["level"] == "extensions"  # tanh and a Python number
    assert case["concepts"] == ["numerics"] and case["hint"] == "softmax minus one-hot"
    assert case["steps"] == {"h": "x.tanh()"}
    assert case["inputs"]["t"] == {"shape": [4], "init": "randint", "high": 3, "seed": 6}
    assert list(case["expect"]["grads"]) == ["x"]  # int64 inputs have no gradient to state

    result = grade("new", "t.up", "--expr", "x * x", "--input", "x=2x3", "--upstream", "--passes", "2")
    assert result.exit_code == 0, result.output
    (case,) = yaml.safe_load(result.output)
    assert case["upstream"] == {"shape": [2, 3], "init": "randn", "seed": 1}
    assert (case["level"], case["passes"]) == ("followups", 2)
    x, g = randn((2, 3), 0), randn((2, 3), 1)
    # Two passes of d(x*x)/dx = 2x, weighted by the upstream gradient.
    assert compare(torch.tensor(case["expect"]["grads"]["x"]), 4 * x * g, DEFAULT_TOLERANCE, "x") is None


def test_new_appends_to_a_file_and_refuses_a_duplicate_id(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "cases.yaml"
    first = grade("new", "t.one", "--expr", "(a * a).sum()", "--input", "a=3", "--out", out)
    assert first.exit_code == 0 and first.stderr == f"added case t.one to {out}\n"
    second = grade("new", "t.two", "--expr", "(a + a).sum()", "--input", "a=scalar", "--out", out)
    assert second.exit_code == 0
    assert [c.id for c in load_cases([out])] == ["t.one", "t.two"]
    before = out.read_text()
    again = grade("new", "t.one", "--expr", "a.sum()", "--input", "a=2", "--out", out)
    assert again.exit_code == 1
    assert again.output == f"Error: id 't.one' already exists at {out}:1:7\n"
    assert out.read_text() == before


def test_new_refuses_to_append_to_a_single_case_file(tmp_path: Path) -> None:
    out = tmp_path / "single.yaml"
    out.write_text(textwrap.dedent(VALID.replace("- id", "  id")))
    result = grade("new", "t.more", "--expr", "a.sum()", "--input", "a=2", "--out", out)
    assert result.exit_code == 1
    assert "holds a single case; make it a list" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--expr", "x @ W", "--input", "x=2x3", "--input", "W=2x3"],
         "Error: the new case is invalid: `x @ W`: @ needs (n, m) @ (m, p), got (2, 3) @ (2, 3)"),
        (["--expr", "x + x", "--input", "x=2x3"],
         "Error: the new case is invalid: the output has shape (2, 3): a non-scalar output needs `upstream` "
         "(the gradient passed to backward); pass --upstream to add a random one"),
        (["--expr", "(x + b).sum()", "--input", "x=2x3", "--input", "b=3", "--level", "core"],
         "Error: the new case is invalid: level core is too low for this case, which needs followups: "
         "`x + b` broadcasts (a followups feature)"),
        (["--expr", "x.sum()", "--input", "x=2by3"],
         "Error: Invalid value for --input: shape '2by3' must look like 2x3 (positive sizes), or 'scalar'"),
        (["--expr", "x.sum()"], "Error: give at least one --input NAME=SHAPE"),
    ],
)
def test_new_rejects_bad_input_with_a_usage_error(args: list[str], message: str) -> None:
    result = grade("new", "t.bad", *args)
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == message


def test_new_rejects_a_bad_id() -> None:
    result = grade("new", "Bad Id", "--expr", "x.sum()", "--input", "x=2")
    assert result.exit_code == 2
    assert "an id may only use lowercase letters" in result.output


# ---- fill ------------------------------------------------------------------------------

AUTHORED = """\
# A file an author wrote by hand.
- id: t.fill.one   # keep this comment
  title: "a * a"
  level: core
  concepts: [accumulation]
  inputs:
    a: {value: [1.0, 2.0]}  # inline comment
  output: (a * a).sum()

# Between the cases.
- id: t.fill.two
  title: stale numbers
  level: core
  concepts: [ops]
  inputs:
    x: {value: [[1.0, -2.0], [3.0, 4.0]]}
    y: {value: [[1.0, 0.0], [0.0, 1.0]], requires_grad: false}
  expect:
    output: 99.0   # stale
    grads:
      x: [[0, 0], [0, 0]]
  output: (x @ y).relu().sum()   # output after expect
  tolerance: {rtol: 1.0e-6}

- id: t.fill.three
  title: literal block at the end
  level: core
  concepts: [ops]
  inputs:
    x: {value: 2.0}
  output: |
    (x * x).relu().sum()

# trailing comment
"""

FILLED = f"""\
# A file an author wrote by hand.
- id: t.fill.one   # keep this comment
  title: "a * a"
  level: core
  concepts: [accumulation]
  inputs:
    a: {{value: [1.0, 2.0]}}  # inline comment
  output: (a * a).sum()
  {MARKER}
  expect:
    output: 5.0
    grads:
      a: [2.0, 4.0]

# Between the cases.
- id: t.fill.two
  title: stale numbers
  level: core
  concepts: [ops]
  inputs:
    x: {{value: [[1.0, -2.0], [3.0, 4.0]]}}
    y: {{value: [[1.0, 0.0], [0.0, 1.0]], requires_grad: false}}
  {MARKER}
  expect:
    output: 8.0
    grads:
      x: [[1.0, 0.0], [1.0, 1.0]]
      y: null
  output: (x @ y).relu().sum()   # output after expect
  tolerance: {{rtol: 1.0e-6}}

- id: t.fill.three
  title: literal block at the end
  level: core
  concepts: [ops]
  inputs:
    x: {{value: 2.0}}
  output: |
    (x * x).relu().sum()
  {MARKER}
  expect:
    output: 4.0
    grads:
      x: 4.0

# trailing comment
"""


def test_fill_adds_and_refreshes_expect_blocks_keeping_the_rest(tmp_path: Path) -> None:
    # By hand: (a*a).sum() at [1, 2] is 5 with grad 2a; x @ I = x, relu keeps 1, 3, 4, so the
    # sum is 8 and the grad is 1 where x > 0; x*x at 2 is 4 with grad 2x = 4.
    path = tmp_path / "cases.yaml"
    path.write_text(AUTHORED)
    refused = grade("fill", path)
    assert refused.exit_code == 1
    assert refused.output.splitlines()[:2] == [
        f"{path}: t.fill.two: the expect block written by hand is not what torch computes:", "  -   expect:"]
    assert "  -     output: 99.0   # stale" in refused.output and "  +     output: 8.0" in refused.output
    assert refused.output.splitlines()[-1] == (f"{path}: not changed; rerun with --force to replace expectations "
                                               "written by hand")
    assert path.read_text() == AUTHORED
    result = grade("fill", "--force", path)
    assert (result.exit_code, result.output) == (0, f"{path}: 2 expect blocks added, 1 refreshed, 0 unchanged\n")
    assert path.read_text() == FILLED
    assert grade("check", path).exit_code == 0

    again = grade("fill", path)
    assert again.output == f"{path}: 0 expect blocks added, 0 refreshed, 3 unchanged\n"
    assert path.read_text() == FILLED


def test_fill_reports_invalid_cases_and_fills_the_others(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(VALID + VALID.replace("t.square", "t.broken").replace("(a * a).sum()", "a.nope()"))
    result = grade("fill", path)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith(f"{path}:14:13: unknown method 'nope'")
    assert lines[1] == f"{path}: 1 expect block added, 0 refreshed, 0 unchanged"
    assert "expect:\n    output: 5.0\n" in path.read_text()


def test_fill_keeps_a_prefix_when_expect_is_the_first_key(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text("- expect: {output: 1.0}\n  " + VALID[2:])
    result = grade("fill", "--force", path)
    assert result.exit_code == 0, result.output
    assert [float(c.explicit.output) for c in load_cases([path])] == [5.0]


# ---- number formatting ------------------------------------------------------------------


def test_numbers_are_written_so_yaml_reads_floats() -> None:
    assert [format_number(v) for v in (7.0, -0.0, 0.1, 1e-05, 123456789012.0, 2.5e20)] == [
        "7.0", "-0.0", "0.1", "1.0e-05", "1.23456789e+11", "2.5e+20",
    ]
    assert [type(yaml.safe_load(format_number(v))) for v in (7.0, 1e-05, 2.5e20)] == [float, float, float]


@settings(derandomize=True, database=None, deadline=None, max_examples=300)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e30, max_value=1e30))
def test_written_numbers_pass_the_default_tolerance(value: float) -> None:
    written = torch.tensor(float(yaml.safe_load(format_number(value))), dtype=torch.float64)
    assert compare(written, torch.tensor(value, dtype=torch.float64), DEFAULT_TOLERANCE, "value") is None


def test_wiring_runs_the_spec_group_from_the_main_command() -> None:
    assert main.get_command(None, "spec") is spec_commands.spec
    assert set(spec_commands.spec.commands) == {"check", "new", "fill", "audit"}


def test_fill_keeps_a_complete_correct_block_unless_forced(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    text = VALID + "  expect: {output: 5, grads: {a: [2, 4]}}   # by hand\n"
    path.write_text(text)
    kept = grade("fill", path)
    assert (kept.exit_code, kept.output) == (0, f"{path}: 0 expect blocks added, 0 refreshed, 1 unchanged\n")
    assert path.read_text() == text
    forced = grade("fill", "--force", path)
    assert forced.output == f"{path}: 0 expect blocks added, 1 refreshed, 0 unchanged\n"
    assert path.read_text() == VALID + f"  {MARKER}\n  expect:\n    output: 5.0\n    grads:\n      a: [2.0, 4.0]\n"
