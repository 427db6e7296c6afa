"""Engines for the interview tests, written from the reference by small edits: each differs in one way.

Each variant is the reference's source with a few lines replaced, so what it changes is all it changes;
an edit that no longer applies (the reference moved on) fails loudly instead of testing nothing.
"""

from __future__ import annotations

from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[2] / "reference" / "engine.py"

_TANH = '''return self._record(out, "tanh", (self,), lambda g, s: (g * (1 - s[0] * s[0]),), (out,))'''
_VERSION_CHECK = "if t._version != version:"
_SAVED = "self.saved = saved\n"

EDITS: dict[str, list[tuple[str, str]]] = {
    # tanh saves its input and recomputes tanh in backward: a is kept, h is not saved by tanh.
    "tanh_saves_input": [(_TANH, '''return self._record(out, "tanh", (self,), '''
                                 '''lambda g, s: (g * (1 - s[0].tanh() ** 2),), (self.data,))''')],
    # tanh's rule is right and saves its output, but its closure holds the input Tensor (to read its flag),
    # which keeps the pre-activation a alive.
    "keeps_tanh_input": [(_TANH, '''return self._record(out, "tanh", (self,), '''
                                 '''lambda g, s: (g * (1 - s[0] * s[0]) if self.requires_grad else None,), (out,))''')],
    # Every op saves every input's values on top of what its rule reads, and no version counter guards them.
    "saves_every_input": [
        (_SAVED, "self.saved = tuple(saved) + tuple(p.data for p in parents)\n"),
        (_VERSION_CHECK, "if False:"),
    ],
}


def write_engine(name: str, folder: Path) -> Path:
    """The reference with ``EDITS[name]`` applied, written to ``folder/<name>.py``."""
    source = REFERENCE.read_text()
    for old, new in EDITS[name]:
        assert source.count(old) == 1, f"{name}: the reference no longer has {old!r}"
        source = source.replace(old, new)
    path = folder / f"{name}.py"
    path.write_text(source)
    return path
