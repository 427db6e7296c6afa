"""Jupyter notebooks as submissions: the code cells are the program.

A notebook is JSON; its code cells, in order, make the source that is graded.
IPython's own syntax is not Python: a cell magic (``%%time``) drops its whole
cell, and a line magic or shell line (``%matplotlib``, ``!pip install``) drops
that line. What was dropped is said in a note, so a candidate whose engine
lived in a ``%%`` cell learns why it went missing.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["notebook_source", "import_lines", "SUFFIX"]

SUFFIX: Final = ".ipynb"
_IPYTHON: Final = ("%", "!")


def notebook_source(raw: bytes) -> tuple[str, str]:
    """(the code cells as one Python source, a note on what was dropped or ""). Raises ValueError when
    ``raw`` is not a notebook."""
    try:
        notebook = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ValueError("not a Jupyter notebook (it is not JSON)") from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a Jupyter notebook (it has no list of cells)")
    parts, dropped_cells, dropped_lines = [], 0, 0
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = _text(cell.get("source"))
        if text.lstrip().startswith("%%"):
            dropped_cells += 1
            continue
        kept = []
        for line in text.splitlines():
            if line.lstrip().startswith(_IPYTHON):
                dropped_lines += 1
                continue
            kept.append(line)
        parts.append(f"# cell {number}\n" + "\n".join(kept))
    dropped = []
    if dropped_cells:
        dropped.append(f"{dropped_cells} cell{'s' if dropped_cells != 1 else ''} of IPython magic (%%)")
    if dropped_lines:
        dropped.append(f"{dropped_lines} magic or shell line{'s' if dropped_lines != 1 else ''} (% or !)")
    note = "graded from the notebook's code cells" + (f"; left out: {', '.join(dropped)}" if dropped else "")
    return "\n\n".join(parts) + "\n", note


def _text(source: Any) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return ""


def import_lines(path: str, class_name: str) -> list[str]:
    """Snippet lines that load a notebook's code cells (as the grade read them) without Jupyter, and torch."""
    return [
        "import json",
        "import torch",
        f"_code = [''.join(c['source']) for c in json.load(open({path!r}, encoding='utf-8'))['cells'] "
        "if c['cell_type'] == 'code']",
        "_namespace = {'__name__': 'solution_under_test'}",
        "exec('\\n'.join(l for s in _code if not s.lstrip().startswith('%%') for l in s.splitlines()"
        " if not l.lstrip().startswith(('%', '!'))), _namespace)",
        f"{class_name} = _namespace[{class_name!r}]",
    ]
