"""Notebooks as submissions: the code cells are the source, IPython's own syntax is left out and said so."""

from __future__ import annotations

import json

from click.testing import CliRunner

from harness.cli import main
from harness.notebooks import notebook_source
from harness.preflight import read_submission


def _notebook(*cells: tuple[str, str]) -> bytes:
    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": text.splitlines(True)}
                                 for kind, text in cells], "metadata": {}, "nbformat": 4}).encode()


def test_code_cells_are_the_source_and_magics_are_left_out_with_a_note():
    raw = _notebook(("markdown", "# Title\nx = 1\n"), ("code", "%load_ext autoreload\nimport torch\n  !ls\n"),
                    ("code", "%%timeit\nslow()\n"), ("code", "class Tensor:\n    pass\n"))
    text, note = notebook_source(raw)
    assert text == "# cell 2\nimport torch\n\n# cell 4\nclass Tensor:\n    pass\n"
    assert note == ("graded from the notebook's code cells; left out: 1 cell of IPython magic (%%), "
                    "2 magic or shell lines (% or !)")
    assert notebook_source(_notebook(("code", "x = 1")))[1] == "graded from the notebook's code cells"


def test_a_notebook_is_read_as_its_code(tmp_path):
    path = tmp_path / "real.ipynb"
    path.write_bytes(_notebook(("code", "class Tensor:\n    pass\n")))
    submission = read_submission(path)
    assert submission.text == "# cell 1\nclass Tensor:\n    pass\n" and submission.note.startswith("graded from")


def test_a_file_named_ipynb_that_is_no_notebook_is_bad_input(tmp_path):
    path = tmp_path / "real.ipynb"
    path.write_text("class Tensor: pass\n")
    result = CliRunner().invoke(main, [str(path)])
    assert result.exit_code == 2
    assert result.stderr == f"error: {path}: not a Jupyter notebook (it is not JSON)\n"
