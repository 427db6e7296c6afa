"""Loading the spec library quickly without changing what it computes.

``grade FILE`` loads every spec case before grading, so the loader avoids torch
calls with large one-off costs (``torch.broadcast_shapes`` and
``backward(gradient)`` import sympy), validates each op once and reuses the
values. These tests check that each shortcut computes what torch computes.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from harness.ops import OPS, broadcast_shape, check_operands, checked_apply
from harness.program import Leaf, Program, ProgramError, Step
from harness.specs import DEFAULT_SPECS_DIR, load_cases

CASES = load_cases([DEFAULT_SPECS_DIR])
UPSTREAM_CASES = [case for case in CASES if case.program.upstream is not None]

# Sizes 0 and 1 are where broadcasting rules differ most.
shapes = st.lists(st.integers(0, 3), max_size=4).map(tuple)


@given(st.lists(shapes, max_size=3))
def test_broadcast_shape_follows_torch(given_shapes: list[tuple[int, ...]]) -> None:
    try:
        expected = tuple(torch.broadcast_shapes(*given_shapes))
    except RuntimeError:
        expected = None
    assert broadcast_shape(*given_shapes) == expected


def test_broadcast_error_message_is_unchanged() -> None:
    a, b = torch.zeros(2, 3), torch.zeros(3, 2)
    assert check_operands(OPS["add"], [a, b]) == "shapes (2, 3) and (3, 2) do not broadcast"


def _steps_with_operands():
    for case in CASES:
        values = {leaf.name: leaf.value.to(torch.float64) if leaf.value.is_floating_point() else leaf.value
                  for leaf in case.program.leaves}
        for step in case.program.steps:
            operands = [values[a] if isinstance(a, str) else a for a in step.args]
            values[step.name] = step.spec.apply_torch(operands, step.param_dict())
            yield case.id, step, operands


def test_checked_apply_returns_the_torch_result_of_every_library_step() -> None:
    ops_seen = set()
    for case_id, step, operands in _steps_with_operands():
        message, value = checked_apply(step.spec, operands, step.param_dict())
        assert message is None, (case_id, step)
        expected = step.spec.apply_torch(operands, step.param_dict())
        assert torch.equal(value, expected), (case_id, step)
        ops_seen.add(step.op)
    assert ops_seen == set(OPS)  # the library exercises every op


def test_checked_apply_gives_no_value_with_a_message() -> None:
    message, value = checked_apply(OPS["log"], [torch.tensor([1.0, -1.0], dtype=torch.float64)])
    assert (message, value) == ("log needs positive inputs", None)
    message, value = checked_apply(OPS["matmul"], [torch.zeros(2, 3), torch.zeros(2, 3)])
    assert message == "@ needs (n, m) @ (m, p), got (2, 3) @ (2, 3)" and value is None


@pytest.mark.parametrize("case", UPSTREAM_CASES, ids=lambda c: c.id)
def test_upstream_gradients_are_those_of_backward_with_a_gradient(case) -> None:
    program = case.program
    leaves = {leaf.name: leaf.value.to(torch.float64).requires_grad_(leaf.requires_grad)
              if leaf.value.is_floating_point() else leaf.value for leaf in program.leaves}
    for _ in range(program.passes):
        values = dict(leaves)
        for step in program.steps:
            operands = [values[a] if isinstance(a, str) else a for a in step.args]
            values[step.name] = step.spec.apply_torch(operands, step.param_dict())
        values[program.output].backward(program.upstream.to(torch.float64))
    got = program.run_torch()
    for leaf in program.leaves:
        if leaf.value.is_floating_point() and leaf.requires_grad:
            # Bit for bit: the shortcut must not even round differently.
            assert torch.equal(got.grads[leaf.name], leaves[leaf.name].grad), leaf.name


def test_upstream_of_the_wrong_shape_is_refused_not_broadcast() -> None:
    x = Leaf("x", torch.ones(3, dtype=torch.float64))
    program = Program((x,), (Step("y", "mul", ("x", 2.0)),), "y", upstream=torch.ones(1, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="shape"):
        program.run_torch()


def test_validated_requirements_match_a_fresh_program() -> None:
    for case in CASES:
        fresh = replace(case.program)  # a new object: nothing cached
        assert fresh.requirements() == set(case.requirements) == case.program.requirements()
        assert fresh.level() == case.program.level()


def test_an_invalid_program_fails_validation_every_time() -> None:
    x = Leaf("x", torch.tensor([1.0, -1.0], dtype=torch.float64))
    program = Program((x,), (Step("y", "log", ("x",)), Step("z", "sum", ("y",))), "z")
    for _ in range(2):
        with pytest.raises(ProgramError, match="log needs positive inputs"):
            program.validate()


def test_loading_restores_threads_and_the_garbage_collector(tmp_path: Path) -> None:
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert gc.isenabled()
        load_cases([DEFAULT_SPECS_DIR / "core" / "sum.yaml"])
        assert torch.get_num_threads() == 2 and gc.isenabled()
        gc.disable()
        load_cases([DEFAULT_SPECS_DIR / "core" / "sum.yaml"])
        assert not gc.isenabled()
    finally:
        gc.enable()
        torch.set_num_threads(threads)


def test_loading_the_library_does_not_import_sympy() -> None:
    # torch imports sympy lazily for symbolic shapes; that costs about a second of every grade.
    code = textwrap.dedent("""
        import sys, torch
        from harness.specs import DEFAULT_SPECS_DIR, load_cases
        assert "sympy" not in sys.modules, "imported before loading"
        load_cases([DEFAULT_SPECS_DIR])
        print("sympy" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_unchanged_spec_files_are_parsed_once_and_an_edit_is_read(tmp_path: Path, monkeypatch) -> None:
    from harness.specs import loader

    spec = tmp_path / "t.yaml"
    case = textwrap.dedent("""\
        id: t.square
        title: "x * x times a constant"
        level: core
        concepts: [accumulation]
        inputs:
          x: {{value: [1.0, 2.0]}}
          c: {{value: [{k}.0, {k}.0]}}
        output: "(x * x * c).sum()"
        """)
    spec.write_text(case.format(k=1))
    parses = []
    real = loader.check_paths
    monkeypatch.setattr(loader, "check_paths", lambda paths: parses.append(1) or real(paths))

    first = load_cases([tmp_path])
    assert load_cases([tmp_path]) == first and len(parses) == 1
    spec.write_text(case.format(k=3))  # same size, new bytes: parsed again, and the new values are used
    (edited,) = load_cases([tmp_path])
    assert len(parses) == 2
    torch.testing.assert_close(edited.expected.grads["x"], torch.tensor([6.0, 12.0], dtype=torch.float64))
