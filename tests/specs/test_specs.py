"""The YAML spec loader: format, positions in errors, the expression whitelist, torch cross-checks."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
import torch

from harness import specs
from harness.specs.expressions import ExprError, compile_expression, method_names, operator_symbols
from harness.compare import DEFAULT_TOLERANCE, FLOAT32_TRANSCENDENTAL_TOLERANCE, Tolerance
from harness.ops import OPS
from harness.specs import DEFAULT_SPECS_DIR, SpecError, check_paths, load_cases, parse_file

BROKEN = Path(__file__).parent / "broken_specs"


def case_text(body: str, **fields: str) -> str:
    """One case with the required keys filled in; ``fields`` override or add keys (raw YAML)."""
    base = {"id": "t.case", "title": "a test case", "level": "core", "concepts": "[ops]"}
    base.update(fields)
    head = "".join(f"{k}: {v}\n" for k, v in base.items())
    return head + textwrap.dedent(body).lstrip("\n")


def load_one(text: str, tmp_path: Path, name: str = "case.yaml") -> specs.SpecCase:
    path = tmp_path / name
    path.write_text(text)
    (case,) = load_cases([path])
    return case


def errors_of(text: str, name: str = "case.yaml") -> list[str]:
    return [str(e) for e in parse_file(name, text).all_errors()]


# ---- valid cases ---------------------------------------------------------------------


def test_worked_example_matches_hand_derivation(tmp_path: Path) -> None:
    text = case_text(
        """
        hint: "Both operands are the same tensor."
        inputs:
          a: {value: 3.0}
        steps:
          h: "a * a"
        output: "(h + a).sum()"
        expect:
          output: 12.0
          grads: {a: 7.0}
        """,
        concepts="[accumulation]",
    )
    case = load_one(text, tmp_path)
    assert (case.id, case.title, case.level, case.concepts, case.hint) == (
        "t.case", "a test case", "core", ("accumulation",), "Both operands are the same tensor.",
    )
    assert [(s.name, s.op, s.args) for s in case.program.steps] == [
        ("h", "mul", ("a", "a")), ("_1", "add", ("h", "a")), ("_2", "sum", ("_1",)),
    ]
    assert case.program.output == "_2"
    # a*a + a at a=3: value 12, gradient 2a + 1 = 7.
    assert float(case.expected.values["_2"]) == 12.0
    assert float(case.expected.grads["a"]) == 7.0
    assert float(case.explicit.output) == 12.0 and float(case.explicit.grads["a"]) == 7.0
    assert case.tolerance == DEFAULT_TOLERANCE
    assert case.requirements == frozenset({"__mul__", "__add__", "sum", "backward"})
    assert case.source == tmp_path / "case.yaml" and case.line == 1


def test_a_case_may_be_hidden_from_the_candidate(tmp_path: Path) -> None:
    body = "inputs: {x: {value: 1.0}}\noutput: x.sum()\n"
    assert load_one(case_text(body, hidden="true"), tmp_path).hidden is True
    assert load_one(case_text(body), tmp_path).hidden is False
    assert errors_of(case_text(body, hidden="yes please")) == [
        "case.yaml:5:9: hidden must be true or false, got the string 'yes please'"]


def test_a_file_may_hold_a_list_of_cases(tmp_path: Path) -> None:
    one = case_text("inputs: {a: {value: 2.0}}\noutput: a * a\n", id="t.one")
    two = case_text("inputs: {a: {value: 2.0}}\noutput: a + a\n", id="t.two")
    listed = "".join("- " + textwrap.indent(c, "  ")[2:] + "\n" for c in (one, two))
    cases = load_one_file(listed, tmp_path)
    assert [(c.id, c.line) for c in cases] == [("t.one", 1), ("t.two", 8)]


def load_one_file(text: str, tmp_path: Path) -> list[specs.SpecCase]:
    path = tmp_path / "cases.yaml"
    path.write_text(text)
    return load_cases([path])


def test_generated_inputs_follow_the_stated_recipe(tmp_path: Path) -> None:
    text = case_text(
        """
        inputs:
          r: {shape: [2, 3], init: randn, seed: 4}
          u: {shape: [50], init: uniform, low: 2, high: 3, seed: 1}
          i: {shape: [50], init: ints, low: -2, high: 2}
          s: {shape: [2, 2], init: arange, scale: 0.5}
          z: {shape: [2], init: zeros, dtype: float32}
          o: {shape: [3], init: ones, requires_grad: false}
          t: {shape: [40], init: randint, high: 3, seed: 9}
        output: "(r.sum() + u.sum() + i.sum() + s.sum() + o.sum()).sum()"
        """,
        level="extensions",
    )
    case = load_one(text, tmp_path)
    leaves = {leaf.name: leaf for leaf in case.program.leaves}
    expected_r = torch.randn((2, 3), generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    assert torch.equal(leaves["r"].value, expected_r)
    u = leaves["u"].value
    assert u.dtype == torch.float64 and bool(((u >= 2) & (u < 3)).all())
    i = leaves["i"].value
    assert i.dtype == torch.float64 and set(i.tolist()) <= {-2.0, -1.0, 0.0, 1.0, 2.0} and len(set(i.tolist())) > 1
    assert leaves["s"].value.tolist() == [[0.0, 0.5], [1.0, 1.5]]
    assert leaves["z"].value.dtype == torch.float32
    t = leaves["t"].value
    assert t.dtype == torch.int64 and set(t.tolist()) == {0, 1, 2}
    assert [leaves[n].requires_grad for n in "ruiszot"] == [True, True, True, True, True, False, False]
    # Same file, same values: generation depends on the seed only.
    again = load_one(text, tmp_path, "again.yaml")
    assert all(torch.equal(a.value, b.value) for a, b in zip(case.program.leaves, again.program.leaves))


def test_float32_inputs_default_to_the_float32_tolerance(tmp_path: Path) -> None:
    text = case_text(
        "inputs: {x: {shape: [3], dtype: float32}}\noutput: x.tanh().sum()\n", level="extensions"
    )
    assert load_one(text, tmp_path).tolerance == FLOAT32_TRANSCENDENTAL_TOLERANCE


def test_tolerance_override_reads_short_exponents(tmp_path: Path) -> None:
    text = case_text("inputs: {x: {shape: [3]}}\noutput: x.sum()\ntolerance: {rtol: 1e-6}\n")
    assert load_one(text, tmp_path).tolerance == Tolerance(rtol=1e-6, atol=DEFAULT_TOLERANCE.atol)


def test_upstream_and_two_passes(tmp_path: Path) -> None:
    text = case_text(
        """
        inputs:
          x: {value: [[1.0, 2.0], [3.0, 4.0]]}
        output: "x * x"
        upstream: {value: [[1.0, 0.0], [0.0, -1.0]]}
        passes: 2
        expect:
          grads: {x: [[4.0, 0.0], [0.0, -16.0]]}
        """,
        level="followups",
    )
    case = load_one(text, tmp_path)
    # Two passes of d(x*x)/dx = 2x weighted by the upstream gradient: 2 * 2x * g.
    assert case.expected.grads["x"].tolist() == [[4.0, 0.0], [0.0, -16.0]]
    assert {"feature:upstream", "feature:passes"} <= case.requirements


def test_stated_values_within_tolerance_pass_and_outside_fail(tmp_path: Path) -> None:
    def text(value: str) -> str:
        return case_text(f"inputs: {{x: {{value: [1.0, 2.0]}}}}\noutput: (x * x).sum()\nexpect: {{output: {value}}}\n")

    load_one(text("5.0000000001"), tmp_path)
    assert errors_of(text("5.00001")) == [
        f"case.yaml:7:18: expect.output disagrees with torch autograd: the spec says 5.00001, torch computes 5 "
        f"({DEFAULT_TOLERANCE.describe()})"
    ]


def test_the_shipped_specs_load() -> None:
    cases = load_cases()
    assert cases, f"no cases under {DEFAULT_SPECS_DIR}"
    assert len({c.id for c in cases}) == len(cases)


# ---- errors, verbatim ------------------------------------------------------------------


def test_bad_yaml_names_line_and_column() -> None:
    assert errors_of("id: [1, 2\ntitle: x\n") == [
        "case.yaml:2:6: invalid YAML: expected ',' or ']', but got ':' (while parsing a flow sequence at line 1)"
    ]


def test_duplicate_mapping_key() -> None:
    text = case_text("inputs: {x: {value: 1.0}}\noutput: x.sum()\ntitle: again\n")
    assert errors_of(text) == ["case.yaml:7:1: duplicate key 'title' in a case (first at line 2)"]


def test_unknown_case_key_lists_the_allowed_ones() -> None:
    text = case_text("inputs: {x: {value: 1.0}}\noutput: x.sum()\nexpected: {output: 1.0}\n")
    assert errors_of(text) == [
        "case.yaml:7:1: unknown key 'expected' in a case (did you mean expect?); allowed: id, title, level, concepts, "
        "hint, inputs, steps, output, upstream, passes, expect, tolerance, hidden"
    ]


def test_expression_error_points_inside_each_scalar_style() -> None:
    body = "inputs: {x: {shape: [2, 3]}, W: {shape: [2, 3]}}\noutput: EXPR\n"
    message = "`x @ W`: @ needs (n, m) @ (m, p), got (2, 3) @ (2, 3)"
    assert errors_of(case_text(body.replace("EXPR", "(x @ W).sum()"))) == [f"case.yaml:6:12: {message}"]
    assert errors_of(case_text(body.replace("EXPR", "'(x @ W).sum()'"))) == [f"case.yaml:6:13: {message}"]
    assert errors_of(case_text(body.replace("EXPR", '"(x @ W).sum()"'))) == [f"case.yaml:6:13: {message}"]
    literal = body.replace("EXPR", "|\n  (x +\n     x @ W).sum()")
    assert errors_of(case_text(literal)) == [f"case.yaml:8:8: {message}"]


def test_int64_value_must_hold_integers() -> None:
    text = case_text("inputs: {t: {value: [0, 1.5], dtype: int64}, x: {value: 1.0}}\noutput: x.sum()\n")
    assert errors_of(text) == [
        "case.yaml:5:25: every element of the value of input 't' must be an integer, got 1.5"
    ]


def test_grad_for_an_unknown_input() -> None:
    text = case_text("inputs: {x: {value: 1.0}}\noutput: x.relu().sum()\nexpect: {grads: {y: 1.0}}\n")
    assert errors_of(text) == ["case.yaml:7:18: expect.grads names 'y', which is not an input; inputs: x"]


def test_output_that_is_just_an_input() -> None:
    text = case_text("inputs: {x: {value: 1.0}}\noutput: x\n")
    assert errors_of(text) == ["case.yaml:6:9: the output must apply at least one op, not just be the input 'x' itself"]


def test_level_too_low_for_a_number_operand() -> None:
    text = case_text("inputs: {x: {value: 1.0}}\noutput: (2 * x).sum()\n", level="followups")
    assert errors_of(text) == [
        "case.yaml:3:8: level followups is too low for this case, which needs extensions: "
        "`2 * x` has a Python number operand (an extensions feature)"
    ]


def test_level_too_low_for_an_extension_op() -> None:
    text = case_text("inputs: {x: {value: 1.0}}\noutput: x.exp().sum()\n")
    assert errors_of(text) == [
        "case.yaml:3:8: level core is too low for this case, which needs extensions: the op exp in `x.exp()` is extensions"
    ]


def test_int64_input_cannot_take_randn() -> None:
    text = case_text("inputs: {t: {shape: [2], dtype: int64}}\noutput: t.sum()\n")
    assert errors_of(text) == [
        "case.yaml:5:33: init randn makes floats, but input 't' is int64; use randint, ints or a value"
    ]


def test_file_level_errors() -> None:
    assert errors_of("") == ["case.yaml:1:1: the file is empty; expected a case or a list of cases"]
    assert errors_of("[]\n") == ["case.yaml:1:1: the list of cases is empty"]
    assert errors_of("just text\n") == ["case.yaml:1:1: a spec file holds a case (a mapping) or a list of cases"]
    assert errors_of("- 3\n") == ["case.yaml:1:3: a case must be a mapping, got 3"]


def test_several_independent_mistakes_are_all_reported() -> None:
    text = case_text("inputs: {x: {value: 1.0}}\noutput: x.sum()\npasses: 0\n", level="basic", concepts="[]")
    assert errors_of(text) == [
        "case.yaml:3:8: unknown level 'basic'; one of: core, followups, extensions",
        f"case.yaml:4:11: concepts must be a non-empty list, of: {', '.join(specs.CONCEPTS)}",
        "case.yaml:7:9: passes must be 1 or 2, got 0",
    ]


def test_spec_error_str_is_path_line_column_message() -> None:
    error = SpecError("specs/x.yaml", 3, 7, "something is wrong")
    assert str(error) == "specs/x.yaml:3:7: something is wrong"
    assert (error.path, error.line, error.column, error.message) == ("specs/x.yaml", 3, 7, "something is wrong")


def test_load_cases_raises_the_first_error_and_check_paths_collects_all(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(case_text("inputs: {x: {value: 1.0}}\noutput: x.nope()\n", id="t.a"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yaml").write_text(case_text("inputs: {x: {value: 1.0}}\noutput: x.sum()\n", id="t.a"))
    (tmp_path / "sub" / "c.yaml").write_text(case_text("inputs: {x: {value: 1.0}}\noutput: x.sum()\n", id="t.c"))
    (tmp_path / "notes.txt").write_text("not a spec")
    assert specs.spec_files([tmp_path]) == [tmp_path / "a.yaml", tmp_path / "sub" / "b.yaml", tmp_path / "sub" / "c.yaml"]
    cases, errors = check_paths([tmp_path])
    assert [c.id for c in cases] == ["t.c"]
    assert [str(e) for e in errors] == [
        f"{tmp_path}/a.yaml:6:11: unknown method 'nope'; known methods: {', '.join(method_names())}",
        f"{tmp_path}/sub/b.yaml:1:5: duplicate id 't.a' (first defined at {tmp_path}/a.yaml:1:5)",
    ]
    with pytest.raises(SpecError) as raised:
        load_cases([tmp_path])
    assert raised.value is not None and str(raised.value) == str(errors[0])


def test_default_specs_dir_is_the_repositorys_specs_folder() -> None:
    assert DEFAULT_SPECS_DIR == Path(__file__).resolve().parents[2] / "specs"


# ---- the broken spec collection ----------------------------------------------------------


def _expected_errors() -> dict[str, list[str]]:
    text = (BROKEN / "expected_errors.txt").read_text()
    text = text.replace("{methods}", ", ".join(method_names())).replace("{operators}", ", ".join(operator_symbols()))
    text = text.replace("{default_tolerance}", DEFAULT_TOLERANCE.describe())
    expected: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            expected.setdefault(line.split(":")[0].split("/")[0], []).append(line)
    return expected


BROKEN_ENTRIES = sorted(p.name for p in BROKEN.iterdir() if p.name != "expected_errors.txt")


def test_the_broken_spec_collection_is_complete() -> None:
    required = {
        "bad_yaml.yaml", "unknown_method.yaml", "matmul_shape_mismatch.yaml", "wrong_gradient.yaml",
        "unknown_key.yaml", "duplicate_id", "duplicate_id_in_file.yaml", "import_call.yaml",
        "used_before_defined.yaml", "int64_requires_grad.yaml", "log_non_positive.yaml", "core_broadcasting.yaml",
        "missing_key.yaml", "nonscalar_output.yaml",
    }  # fmt: skip
    assert required <= set(BROKEN_ENTRIES)
    assert set(_expected_errors()) == set(BROKEN_ENTRIES)


@pytest.mark.parametrize("entry", BROKEN_ENTRIES)
def test_each_broken_spec_gives_its_own_error(entry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BROKEN)
    cases, errors = check_paths([entry])
    assert [str(e) for e in errors] == _expected_errors()[entry]
    if not entry.startswith("duplicate_id"):
        assert cases == []


# ---- expressions ---------------------------------------------------------------------------


def _names() -> itertools.count:
    return itertools.count(1)


def compile_form(text: str, *names: str) -> list:
    counter = _names()
    _, built = compile_expression(text, dict.fromkeys(names), fresh=lambda: f"_{next(counter)}", compute=False)
    return [b.step for b in built]


@pytest.mark.parametrize("spec", OPS.values(), ids=list(OPS))
def test_every_op_in_the_table_reads_back_from_its_syntax(spec) -> None:
    operands = ["a", "b"][: len(spec.slots)]
    params = {p: (2, 3) if p == "shape" else 2 for p in spec.params}
    text = spec.render(operands, params)
    (step,) = compile_form(text, *operands)
    assert (step.op, step.args) == (spec.name, tuple(operands))
    assert spec.render([str(a) for a in step.args], step.param_dict()) == text


def test_nested_expression_becomes_steps_in_evaluation_order() -> None:
    steps = compile_form("(x @ W + b).relu().sum() * 0.5", "x", "W", "b")
    assert [(s.name, s.op, s.args) for s in steps] == [
        ("_1", "matmul", ("x", "W")), ("_2", "add", ("_1", "b")), ("_3", "relu", ("_2",)),
        ("_4", "sum", ("_3",)), ("_5", "mul", ("_4", 0.5)),
    ]


def test_parameters_by_keyword_default_and_negative_numbers() -> None:
    assert [s.params for s in compile_form("x.batch_norm(eps=1e-3).batch_norm()", "x")] == [(("eps", 1e-3),), ()]
    assert [s.args for s in compile_form("x * -2", "x")] == [("x", -2)]
    assert [s.params for s in compile_form("x ** -0.5", "x")] == [(("p", -0.5),)]


@pytest.mark.parametrize(
    ("text", "offset", "message"),
    [
        ("__import__('os').system('x')", 0, "cannot call `__import__`: a spec expression may only call the op "
         "table's methods on a tensor, like `x.relu()`"),
        ("print(x)", 0, "cannot call `print`: a spec expression may only call the op table's methods on a tensor, "
         "like `x.relu()`"),
        ("x.__class__.__bases__", 2, "unknown attribute '__class__'; the only attributes are .T and the op table's methods"),
        ("x.relu", 2, ".relu is a method: call it, as in `x.relu()`"),
        ("x.T()", 2, ".T is an attribute, not a method: write `x.T`"),
        ("(lambda: x)()", 1, "a lambda is not allowed in a spec expression"),
        ("[x for x in y]", 0, "a comprehension is not allowed in a spec expression"),
        ("x + 'a'", 4, "a string is not allowed in a spec expression; only names, numbers and ops"),
        ("f'{x}'", 0, "an f-string is not allowed in a spec expression"),
        ("x if x else x", 0, "a conditional expression is not allowed in a spec expression"),
        ("x < x", 0, "a comparison is not allowed in a spec expression"),
        ("~x", 0, "operator ~ is not in the op table; known operators: " + ", ".join(operator_symbols())),
        ("x[0:1]", 2, "a slice is not allowed as an index; use an int64 input"),
        ("x.sum(dim=0)", 2, "sum() takes no keyword arguments"),
        ("x.relu(x)", 2, "relu() takes 0 positional arguments, got 1"),
        ("x ** x", 5, "parameter 'p' of pow must be a number or a tuple of numbers, not `x`"),
        ("y + x", 0, "'y' is used before it is defined (steps run in the order they are written)"),
        ("z + x", 0, "unknown name 'z'; defined so far: x"),
        ("x +", 3, "invalid expression: invalid syntax"),
        ("True * x", 0, "True is not allowed in a spec expression; only names, numbers and ops"),
    ],
)
def test_expressions_outside_the_whitelist_are_rejected(text: str, offset: int, message: str) -> None:
    counter = _names()
    with pytest.raises(ExprError) as raised:
        compile_expression(text, {"x": None}, fresh=lambda: f"_{next(counter)}", pending=("y",), compute=False)
    assert (raised.value.offset, raised.value.message) == (offset, message)


def test_an_expression_is_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = case_text(
        f"inputs: {{x: {{value: 1.0}}}}\noutput: \"__import__('os').system('touch {marker}') + x.sum()\"\n"
    )
    assert len(errors_of(text)) == 1
    assert not marker.exists()


def test_domain_errors_come_from_the_op_table() -> None:
    counter = _names()
    scope = {"x": torch.zeros(2, 3, dtype=torch.float64), "t": torch.tensor([0, 5])}
    with pytest.raises(ExprError) as raised:
        compile_expression("x.cross_entropy(t)", scope, fresh=lambda: f"_{next(counter)}")
    assert raised.value.message == "`x.cross_entropy(t)`: targets must lie in [0, 3)"
