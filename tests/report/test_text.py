"""The text report fits the terminal: its width (snippet code aside) and, by default, one screen's height, with
the first root causes in full and the rest one line each; -v shows everything."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from harness.report.model import CheckResult, Interview, Report, RootCause
from harness.report.text import render_text

LONG = ("When a tensor feeds several operations, each contribution replaces the previous one instead of being "
        "added to it. Only the last contribution survives, so anything used twice gets too small a gradient.")
SNIPPET = "\n".join(["import torch", "a = Tensor(torch.tensor(-3.0, dtype=torch.float64), requires_grad=True)",
                     "y = a * a", "y.backward()",
                     "assert torch.allclose(a.grad.double(), expected, rtol=1e-07, atol=6e-07), "
                     "f'a.grad = {a.grad}, expected {expected}'"])


def _cause(n: int, checks: tuple[str, ...]) -> RootCause:
    return RootCause(f"bug{n}", f"the catalogued bug number {n}, whose name is long enough to wrap on a narrow "
                     "terminal", "accumulation", LONG, "Look at the line that stores a gradient for a tensor that "
                     "may already have one.", checks, SNIPPET, points=3.0)


def _report(causes: int = 3, failures: int = 30, unexplained: int = 2) -> Report:
    checks = [CheckResult(f"core.check_{i}", "core", "accumulation", "A title that says what the check checks",
                          "failed", "x.grad differs in 2 of 2 element(s); worst at [0]: got 1, expected 1024 "
                          "(rtol=1e-07, atol=1e-07)", 0.0, 1.0, details={"snippet": SNIPPET, "hint": LONG})
              for i in range(failures)]
    checks += [CheckResult(f"followups.other_{i}", "followups", "memory", "Another check", "error",
                           "not implemented (NotImplementedError) [in no_grad] (line 65: raise NotImplementedError)",
                           0.0, 1.0) for i in range(unexplained)]
    checks += [CheckResult(f"extensions.op_{i}", "extensions", "ops", "An op", "not_attempted",
                           "not attempted: Tensor has no tanh") for i in range(20)]
    per = max(1, failures // max(causes, 1))
    root = tuple(_cause(n + 1, tuple(c.id for c in checks[n * per:(n + 1) * per])) for n in range(causes))
    return Report(file="/home/candidate/interview/solution.py", status="graded", score=12.2, max_score=100.0,
                  levels={"core": {"score": 12.2, "max_score": 60.0}, "followups": {"score": 0.0, "max_score": 25.0},
                          "extensions": {"score": 0.0, "max_score": 15.0}},
                  checks=tuple(checks), seed=0, source_sha256="c76b9f5e69f2" * 4, isolation="sandbox",
                  interview=Interview(False, 48.0, 12.2, gates_failed=("core.requires_grad", "core.grad_types",
                                                                       "core.accumulation", "core.order")),
                  root_causes=root)


def _outside_code(text: str) -> list[str]:
    """The lines of ``text`` that are not snippet code (the lines indented below a 'reproduce:')."""
    lines, code_indent = [], None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if code_indent is not None and line.strip() and indent > code_indent:
            continue
        code_indent = indent if line.strip() == "reproduce:" else None if line.strip() else code_indent
        lines.append(line)
    return lines


@given(width=st.integers(40, 160), verbose=st.booleans())
def test_no_line_is_wider_than_the_terminal_but_snippet_code(width, verbose):
    text = render_text(_report(), verbose=verbose, width=width)
    assert max(len(line) for line in _outside_code(text)) <= width
    if verbose:
        assert SNIPPET.splitlines()[-1] in text  # code is never wrapped


@pytest.mark.parametrize("width, height, screen", [(80, 40, False), (100, 40, False), (120, 60, False),
                                                    (80, 24, True), (80, 40, True), (60, 30, True)])
def test_the_default_report_fits_with_fix_first_its_levels_and_the_score(width, height, screen):
    text = render_text(_report(), width=width, height=height, screen=screen)
    lines = text.splitlines()
    # On a screen a line wider than it (snippet code) takes two rows.
    rows = sum(max(1, -(-len(line) // width)) for line in lines) if screen else len(lines)
    assert rows <= height
    assert "Fix first" in lines and any(line.startswith("score 12.2/100.0") for line in lines[-4:])
    for n in (1, 2, 3):
        assert any(line.startswith(f"  {n}. the catalogued bug number {n}") for line in lines)
    for level in ("core", "followups", "extensions"):
        assert any(line.startswith(level) for line in lines)


def test_the_first_cause_is_shown_in_full_and_the_rest_one_line_each():
    lines = render_text(_report(), width=80, height=40).splitlines()
    assert lines.count("     reproduce:") == 1  # the first cause's snippet, no other's
    full = render_text(_report(), width=80, height=200).splitlines()
    assert full.count("     reproduce:") == 3  # with room, every cause in full
    # The second cause is never shown in part: whole, or its first line alone.
    second = next(i for i, line in enumerate(lines) if line.startswith("  2. "))
    assert lines[second + 2].startswith("  3. ")
    # The first cause is whole even where the height cannot hold it; on a screen it gives way.
    assert render_text(_report(), width=80, height=10).count("reproduce:") == 1
    assert "reproduce:" not in render_text(_report(), width=80, height=24, screen=True)


def test_failures_no_cause_explains_are_counted_on_their_levels_line_and_listed_with_room():
    short = render_text(_report(unexplained=2), width=80, height=40)
    assert "followups     0.0/25.0   2 error (2 not in Fix first)" in short
    roomy = render_text(_report(causes=1, unexplained=2), width=100, height=80)
    assert "  ERR  followups.other_0: not implemented (NotImplementedError)" in roomy


def test_verbose_shows_every_cause_in_full_and_every_check():
    text = render_text(_report(), verbose=True, width=80)
    assert text.count("reproduce:") >= 3
    assert all(f"extensions.op_{i}" in text for i in range(20))
    assert "-v shows" not in text


def test_the_default_report_says_where_the_rest_is():
    assert "(-v shows every check and every cause in full)" in render_text(_report())
    assert "(f and Enter: the full report)" in render_text(_report(), more="f and Enter: the full report")


def _printing(stdout_lines: int) -> Report:
    from dataclasses import replace

    return replace(_report(causes=1, unexplained=0), output={"stdout": "\n".join(f"epoch {i}" for i in
                                                                              range(stdout_lines))})


def test_what_the_submission_printed_shows_its_first_line_always_and_more_with_v():
    crowded = render_text(_printing(50), width=80, height=20).splitlines()
    at = crowded.index("the submission wrote to stdout:")
    assert crowded[at + 1:at + 3] == ["  | epoch 0", "  | ... (50 lines in all: -v shows up to 20, the JSON report "
                                                     "every one)"]
    roomy = render_text(_printing(50), width=80, height=200)
    assert "  | epoch 2\n  | ... (50 lines in all" in roomy and "epoch 3" not in roomy
    verbose = render_text(_printing(50), verbose=True, width=80)
    assert "  | epoch 19\n  | ... (50 lines in all: the JSON report has every one)" in verbose
    assert "epoch 20" not in verbose


def test_a_count_of_printed_lines_is_said_only_when_some_are_left_out():
    roomy = render_text(_printing(2), width=80, height=200)
    assert "  | epoch 0\n  | epoch 1\n" in roomy and "lines in all" not in roomy
    crowded = render_text(_printing(2), width=80, height=20)
    assert "  | epoch 0\n  | ... (2 lines in all" in crowded and "epoch 1" not in crowded
    assert "lines in all" not in render_text(_printing(2), verbose=True, width=80)
    assert "lines in all" not in render_text(_printing(1), width=80, height=20)
