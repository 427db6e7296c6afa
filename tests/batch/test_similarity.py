"""Similarity: blind to names, comments, strings, layout and padding; the template shared by all is left out;
the input is bounded."""

import ast
import json
from pathlib import Path

import pytest

from harness.batch.similarity import (FREE_RATIO, MAX_TOKENS, MIN_FINGERPRINTS, THRESHOLD, _template, fingerprint,
                                      matched_regions, normalised_tokens, pair_score, similar_pairs, without_padding)

ROOT = Path(__file__).resolve().parents[2]
ENGINE = (ROOT / "tests" / "solutions" / "overwrite_grad.py").read_text()


def test_names_comments_strings_and_layout_do_not_count():
    assert normalised_tokens("total = grad + 2  # add\n") == normalised_tokens('s=g+7\n')
    assert normalised_tokens('x = "a" "b"\ny = """doc"""\n') == ["N", "=", "S", "N", "=", "S"]
    assert normalised_tokens("def f(:\n") == ["def", "N", "(", ":"]  # stops at the error, keeps what it read


def test_a_disguised_copy_is_found_and_an_independent_engine_is_not():
    disguised = "# my own work\n" + ENGINE.replace("grad", "gradient").replace("self", "me").replace("    ", "\t")
    independent = (ROOT / "reference" / "engine.py").read_text()
    pairs = similar_pairs({"orig": ENGINE, "copy": disguised, "ref": independent})
    assert [(p["a"], p["b"], p["score"]) for p in pairs] == [("copy", "orig", 1.0)]


def test_the_template_is_not_evidence():
    template = (ROOT / "candidate_template" / "solution.py").read_text()
    assert similar_pairs({"a": template, "b": template}) == []
    assert similar_pairs({"a": template + ENGINE, "b": template + "x = 1\n"}, threshold=0.0) == []


def test_score_is_the_share_of_the_smaller_submissions_fingerprints():
    # Anything added to the larger one (here an unrelated engine) cannot lower the score.
    other = (ROOT / "reference" / "engine.py").read_text()
    own = fingerprint(ENGINE) - fingerprint(other)
    [pair] = similar_pairs({"a": ENGINE, "b": ENGINE + "\n" + other}, threshold=0.0, base=())
    assert pair["score"] == 1.0 and pair["shared"] >= len(own) > MIN_FINGERPRINTS


def _semicolon_pass(source: str) -> str:
    """``;pass`` after every simple statement that ends its line."""
    lines = []
    for line in source.splitlines():
        body = line.strip()
        simple = body and not body.startswith(("#", "@", '"', "'")) and not body.endswith((":", ",", "(", "[", "{"))
        lines.append(line + ";pass" if simple and '"""' not in body else line)
    return "\n".join(lines) + "\n"


def _dead_code(source: str) -> str:
    """Varied statements that never matter after every statement of every function, and definitions
    nothing uses."""
    padding = ["_u{n} = {n} * 7", "if False:\n{pad}    print({n})", "_t{n} = [i for i in range({n})]", "{n}",
               "while 0:\n{pad}    break", "'note {n}'"]
    lines, inside = [], False
    for n, line in enumerate(source.splitlines()):
        lines.append(line)
        body = line.strip()
        inside = inside or body.startswith("def ")
        pad = " " * (len(line) - len(line.lstrip()) + (4 if body.endswith(":") else 0))
        if inside and body and not body.startswith(("#", "@", '"', "'")) and not body.endswith((",", "(", "[")):
            lines.append(pad + padding[n % len(padding)].format(n=n, pad=pad))
    lines += ["def helper(a, b):", "    return a * b + 3", "    x = 1", "class Unused:", "    def go(self):",
              "        return helper(1, 2)"]
    return "\n".join(lines) + "\n"


def _plain_score(a: str, b: str) -> float:
    """Jaccard index of the two sources' token 8-gram sets, as similarity once was."""
    grams = [{tuple(t[i:i + 8]) for i in range(len(t) - 7)} for t in map(normalised_tokens, (a, b))]
    return len(grams[0] & grams[1]) / len(grams[0] | grams[1])


@pytest.mark.parametrize("pad", [_semicolon_pass, _dead_code])
def test_a_padded_copy_is_found(pad):
    padded = pad(ENGINE)
    ast.parse(padded)
    assert _plain_score(ENGINE, padded) < THRESHOLD  # the padding hides the copy from plain token n-grams
    [pair] = similar_pairs({"orig": ENGINE, "copy": padded})
    assert (pair["a"], pair["b"], pair["score"]) == ("copy", "orig", 1.0)


def test_what_can_never_run_is_dropped():
    assert without_padding("def f(x):\n    return x\n    y = 2\npass\nif False:\n    z()\nf(1)\n") == \
        "def f(x):\n    return x\nf(1)"
    # a helper that only dead code calls is dead too
    assert without_padding("def g():\n    pass\ndef h():\n    g()\nprint(1)\n") == "print(1)"


def test_input_is_bounded():
    huge = "x = y + 1\n" * 300_000  # 3 MB, ten times what is compared
    assert len(normalised_tokens(huge)) <= MAX_TOKENS
    assert similar_pairs({"a": huge, "b": huge}) == []  # one repeated line: too few fingerprints to judge


def _lines(regions, side):
    return {line for pair in regions for line in range(pair[side][0], pair[side][1] + 1)}


def test_matched_regions_pair_the_lines_two_sources_share():
    code = [i for i, line in enumerate(ENGINE.splitlines(), 1) if line.strip() and not line.strip().startswith("#")]
    # a renamed copy, shifted by one line: every line of code is matched, each with its own line of the copy
    renamed = "# mine\n" + ENGINE.replace("grad", "g")
    regions = matched_regions(ENGINE, renamed, base="")
    assert set(code) <= _lines(regions, 0) and {i + 1 for i in code} <= _lines(regions, 1)
    assert all(b[0] - a[0] == 1 and b[1] - a[1] == 1 for a, b in regions)
    # ;pass after every statement is padding, not a difference
    assert set(code) <= _lines(matched_regions(ENGINE, _semicolon_pass(ENGINE), base=""), 0)
    # the template every candidate starts from is never a match
    template = (ROOT / "candidate_template" / "solution.py").read_text()
    assert matched_regions(template, template) == []
    # an independent engine shares short runs only (a line or a few: what any two engines write alike)
    reference = (ROOT / "reference" / "engine.py").read_text()
    assert max(a[1] - a[0] for a, _ in matched_regions(ENGINE, reference)) < 8
    assert max(a[1] - a[0] for a, _ in regions) > 50


def test_matched_regions_are_bounded():
    huge = "x = y + 1\n" * 300_000
    [(left, right)] = matched_regions(huge, huge, base="")
    assert left == right and left[0] == 1 and left[1] <= MAX_TOKENS


def _notebook(source: str, cells: int = 3) -> str:
    """``source`` as a Jupyter notebook: a markdown cell, then its lines split over ``cells`` code cells."""
    lines = source.splitlines(keepends=True)
    cut = [i for i, line in enumerate(lines) if line.startswith(("class ", "def "))][:cells]
    bounds = [0, *cut[1:], len(lines)]
    code = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
             "source": lines[a:b]} for a, b in zip(bounds, bounds[1:])]
    return json.dumps({"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# My engine\n"]}, *code],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def test_a_copy_handed_in_as_a_notebook_is_found():
    copy = _notebook(ENGINE.replace("grad", "gradient").replace("self", "me"))
    [pair] = similar_pairs({"orig": ENGINE, "copy.ipynb": copy})
    assert (pair["a"], pair["b"], pair["score"]) == ("copy.ipynb", "orig", 1.0)


def _many_engines(limit: int = 227 * 1024, leave_out: str = "") -> str:
    """One file made of the public, blind and bug corpora's engines, up to ``limit`` bytes."""
    parts, size = [], 0
    for folder in ("public", "blind", "bugs", "conventions"):
        for path in sorted((ROOT / "tests" / "corpus" / folder).glob("*.py")):
            if path.name == leave_out or size > limit:
                continue
            parts.append(path.read_text())
            size += len(parts[-1])
    return "\n\n".join(parts)


def test_a_large_file_of_many_engines_is_paired_with_nobody():
    honest = (ROOT / "tests" / "corpus" / "public" / "karpathy_micrograd.py").read_text()
    big = _many_engines(leave_out="karpathy_micrograd.py")
    assert len(big) > 200 * 1024
    small, large = fingerprint(honest) - _template(), fingerprint(big) - _template()
    assert len(small & large) / len(small) > THRESHOLD  # it holds most of the honest engine's common idioms
    assert similar_pairs({"honest": honest, "big": big}) == []


def test_the_score_weighs_sizes_only_far_apart():
    assert pair_score(100, 100, 100 * FREE_RATIO) == 1.0  # a copy in a file up to FREE_RATIO times its size
    assert pair_score(100, 100, 200 * FREE_RATIO) == 0.5
    assert pair_score(50, 400 * FREE_RATIO, 100) == 0.125 and pair_score(0, 0, 10) == 0.0
