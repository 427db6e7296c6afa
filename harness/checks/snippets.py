"""A failing check as Python the candidate can paste and run from any folder.

The snippet imports the submission by its path, builds the failing graph with
the candidate's class, runs backward, and ends with the assertion that fails
exactly as the check did (the same value or gradient, the same element, the
same tolerance). Values are written out while they are few; large inputs are
rebuilt from their seeded recipe, and large expected tensors are checked at
the element the check found worst. An exception needs no assertion: running
the snippet raises it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Final, Sequence

import torch

from harness.compare import DEFAULT_TOLERANCE, Tolerance, as_zero_d, compare, tolerance_for, unravel
from harness import notebooks
from harness.program import Outcome, Program
from harness.report.safety import one_line

__all__ = ["reproduce", "ends_in_its_failure", "tensor_literal", "RAISES", "MAX_NUMBERS"]

MAX_NUMBERS: Final = 200
"""Numbers written out in one snippet, at most (inputs and the expected value together)."""
_MAX_CHARACTERS: Final = 12_000
"""A snippet longer than this (inputs without a recipe, written out) is not shown at all."""
_INLINE_EXPECTED: Final = 48
"""An expected tensor up to this size is compared whole; a larger one at its worst element."""


RAISES: Final = "# raises "
"""How a snippet that ends in an exception says which (one comment line)."""


def ends_in_its_failure(snippet: str) -> bool:
    """Whether a snippet ends in an assertion or names the exception it raises (not just the calls that ran)."""
    return any(line.startswith(("assert ", RAISES)) for line in snippet.splitlines())


def reproduce(program: Program, submission: Path | str, class_name: str, expected: Outcome | None = None,
              observed: Any = None, tolerance: Tolerance | None = None, asserting: Sequence[str] = ()) -> str:
    """The snippet for ``program`` failing on the submission at ``submission``.

    ``observed`` is what the candidate's engine gave (an ``Observation``): it
    decides which assertion the snippet ends with. Without it (the run raised
    or hung) the snippet ends with the call that fails. ``asserting`` are the
    lines a check that judges something else (a convention) ends with instead.
    """
    expected = expected or program.run_torch()
    lines = [*_import_lines(Path(submission), class_name), ""]
    budget = MAX_NUMBERS
    for leaf in program.leaves:
        literal = tensor_literal(leaf.value)
        if leaf.value.numel() > 16 and leaf.recipe is not None and leaf.value.numel() > budget // 4:
            literal = leaf.recipe
        else:
            budget -= leaf.value.numel()
        if leaf.raw:
            lines.append(f"{leaf.name} = {literal}")
        else:
            requires = ", requires_grad=True" if leaf.requires_grad else ""
            lines.append(f"{leaf.name} = {class_name}({literal}{requires})")
    body = [f"{s.name} = {s.spec.render([a if isinstance(a, str) else repr(a) for a in s.args], s.param_dict())}"
            for s in program.steps]
    if program.output_requires_grad():
        upstream = "" if program.upstream is None else tensor_literal(program.upstream)
        if program.upstream is not None and program.upstream.numel() > 16 and program.upstream_recipe:
            upstream = program.upstream_recipe
        body.append(f"{program.output}.backward({upstream})")
    if program.passes > 1:
        lines.append(f"for _ in range({program.passes}):  # forward and backward, {program.passes} times")
        body = ["    " + line for line in body]
    lines += body
    if sum(len(line) for line in lines) > _MAX_CHARACTERS:
        return ""  # inputs with no recipe too large to write out: the message says what failed
    error = getattr(observed, "error", None) if observed is not None else None
    if asserting:
        lines += list(asserting)
    elif observed is not None and error is None:
        lines += _assertion(program, observed, expected, tolerance)
    elif error:
        message = str(error.get("message", "")).splitlines()[:1]
        raised = f"{error.get('type', 'an exception')}" + (f": {message[0][:120]}" if message else "")
        lines.append(f"{RAISES}{one_line(raised)}")  # one comment line, whatever the exception's text holds
    return "\n".join(lines)


def _import_lines(path: Path, class_name: str) -> list[str]:
    """The submission imported from its own file and nothing else: no folder goes on ``sys.path``, so a
    module lying beside it (another candidate's, in a flat folder) is never imported by the snippet."""
    if path.suffix == notebooks.SUFFIX:
        return notebooks.import_lines(str(path.resolve()), class_name)
    return ["import runpy", "import torch", f"{class_name} = runpy.run_path({str(path.resolve())!r})[{class_name!r}]"]


def _assertion(program: Program, observed: Any, expected: Outcome, tolerance: Tolerance | None) -> list[str]:
    """The assertion for the first thing the candidate got wrong, in the order the checks compare."""
    transcendental = any(step.spec.transcendental for step in program.steps)
    float32 = any(leaf.value.dtype == torch.float32 for leaf in program.leaves if not leaf.raw)
    tol = tolerance or (tolerance_for(torch.float32, transcendental) if float32 else DEFAULT_TOLERANCE)
    for step in program.steps:
        got = as_zero_d(observed.values.get(step.name), expected.values[step.name])
        if isinstance(got, torch.Tensor) and compare(got, expected.values[step.name], tol, step.name) is not None:
            return _compare_lines(f"{step.name}.data", observed.values.get(step.name), expected.values[step.name], tol)
    for step in program.steps:
        got = observed.requires_grad.get(step.name)
        if step.name in observed.requires_grad and got != expected.requires_grad[step.name]:
            want = expected.requires_grad[step.name]
            return [f"assert {step.name}.requires_grad is {want}, "
                        f"f'{step.name}.requires_grad is {{{step.name}.requires_grad}}, expected {want}'"]
    for leaf in program.leaves:
        if leaf.raw:
            continue
        got, want = observed.grads.get(leaf.name), expected.grads[leaf.name]
        if not isinstance(got, (torch.Tensor, type(None))):
            return [f"assert isinstance({leaf.name}.grad, torch.Tensor), "
                        f"f'{leaf.name}.grad is a {{type({leaf.name}.grad).__name__}}, expected a torch.Tensor'"]
        if compare(as_zero_d(got, want), want, tol, leaf.name) is not None:
            return _compare_lines(f"{leaf.name}.grad", got, want, tol)
    return []


def _compare_lines(what: str, got: torch.Tensor | None, want: torch.Tensor | None, tol: Tolerance) -> list[str]:
    lines = ["# what torch's autograd computes for the same graph:"]
    if want is None:
        return lines + [f"assert {what} is None, f'{what} should be None, got {{{what}}}'"]
    shape = tuple(want.shape)
    lines.append(f"assert {what} is not None, '{what} is None'")
    if shape == () and got is not None and got.dim() > 0 and all(size == 1 for size in got.shape):
        # One element in size-1 axes where torch has a 0-d tensor: forgiven here as the check forgave it.
        lines.append(f"assert {what}.numel() == 1, f'{what} has shape {{tuple({what}.shape)}}, expected one element'")
        what, got = f"{what}.reshape(())", got.reshape(())
    else:
        lines.append(f"assert tuple({what}.shape) == {shape!r}, f'{what} has shape {{tuple({what}.shape)}}, "
                     f"expected {shape!r}'")
    if got is None or tuple(got.shape) != shape:
        return lines
    scale = max(1.0, float(want.abs().max())) if want.numel() and bool(torch.isfinite(want).all()) else 1.0
    atol = tol.atol * scale
    if want.numel() <= _INLINE_EXPECTED:
        lines.append(f"expected = {tensor_literal(want)}")
        lines.append(f"assert torch.allclose({what}.double(), expected, rtol={tol.rtol!r}, atol={atol!r}), "
                     f"f'{what} = {{{what}}}, expected {{expected}}'")
        return lines
    # Too large to write out: the element the check found worst, with the same tolerance.
    err = ((got.double() - want.double()).abs() - (atol + tol.rtol * want.double().abs()))
    err = torch.where(torch.isnan(err), torch.full_like(err, math.inf), err)
    flat = int(torch.argmax(err.reshape(-1)))
    index = unravel(flat, shape)
    value = float(want.reshape(-1)[flat])
    element = f"{what}[{', '.join(map(str, index))}]"
    bound = atol + tol.rtol * abs(value)
    lines.append(f"assert abs(float({element}) - {value!r}) <= {bound!r}, "
                 f"f'{element} = {{float({element})}}, expected {value!r}'")
    return lines


def tensor_literal(t: torch.Tensor) -> str:
    dtype = str(t.dtype).removeprefix("torch.")
    return f"torch.tensor({_literal(t.tolist(), t.is_floating_point())}, dtype=torch.{dtype})"


def _literal(values: Any, floating: bool) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_literal(v, floating) for v in values) + "]"
    if not floating:
        return repr(values)
    value = float(values)
    return repr(value) if math.isfinite(value) else f"float('{value}')"
