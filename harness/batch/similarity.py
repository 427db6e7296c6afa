"""Pairs of submissions whose code is alike once names, comments, strings and layout are set aside.

Each source becomes a token stream in which every identifier is ``N``, every
string ``S`` and every number ``0`` (keywords, operators and structure stay), so
renaming variables, rewording comments or reformatting changes nothing. Two
submissions are compared by the Jaccard index of their sets of token n-grams;
n-grams of the candidate template are left out first, since every candidate
starts from it.
"""

from __future__ import annotations

import io
import itertools
import keyword
import token
import tokenize
from collections import Counter
from importlib import resources
from typing import Iterable, Mapping

__all__ = ["fingerprint", "similar_pairs", "NGRAM", "THRESHOLD"]

NGRAM = 8
"""Tokens per n-gram: long enough that two unrelated engines share few, short enough to survive small edits."""
THRESHOLD = 0.6
"""Pairs at or above this score are reported."""
_SKIP = {token.COMMENT, token.NL, token.NEWLINE, token.INDENT, token.DEDENT, token.ENCODING, token.ENDMARKER,
         token.TYPE_COMMENT}


def normalised_tokens(source: str) -> list[str]:
    """The source's tokens with names, strings and numbers made anonymous; stops quietly at a syntax error."""
    out: list[str] = []
    previous = ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in _SKIP:
                continue
            if tok.type == token.STRING or tok.type in _FSTRING:
                if tok.type in _FSTRING and tok.type != _FSTRING_START:
                    continue
                text = "S"
            elif tok.type == token.NUMBER:
                text = "0"
            elif tok.type == token.NAME and not keyword.iskeyword(tok.string):
                text = "N"
            else:
                text = tok.string
            if text == "S" and previous == "S":  # implicit concatenation, docstring split in two: one string
                continue
            out.append(text)
            previous = text
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


_FSTRING_START = getattr(token, "FSTRING_START", -1)
_FSTRING = {getattr(token, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(token, name)}


def fingerprint(source: str, n: int = NGRAM) -> set[int]:
    """The hashes of the source's normalised token n-grams."""
    tokens = normalised_tokens(source)
    return {hash(tuple(tokens[i:i + n])) for i in range(max(0, len(tokens) - n + 1))}


def _template() -> set[int]:
    try:
        return fingerprint(resources.files("candidate_template").joinpath("solution.py").read_text())
    except (OSError, ModuleNotFoundError):
        return set()


def similar_pairs(sources: Mapping[str, str], threshold: float = THRESHOLD,
                  base: Iterable[int] | None = None) -> list[dict[str, object]]:
    """Pairs ``{"a", "b", "score", "shared"}`` with a Jaccard score >= ``threshold``, most alike first.

    ``base`` holds n-grams to ignore (default: the candidate template's). Uses an
    inverted index, so only pairs that share an n-gram are ever compared.
    """
    ignored = set(_template() if base is None else base)
    prints = {sid: fingerprint(text) - ignored for sid, text in sources.items()}
    owners: dict[int, list[str]] = {}
    for sid, grams in prints.items():
        for gram in grams:
            owners.setdefault(gram, []).append(sid)
    shared: Counter[tuple[str, str]] = Counter()
    for ids in owners.values():
        for a, b in itertools.combinations(sorted(ids), 2):
            shared[(a, b)] += 1
    pairs = []
    for (a, b), common in shared.items():
        union = len(prints[a]) + len(prints[b]) - common
        score = common / union if union else 0.0
        if score >= threshold:
            pairs.append({"a": a, "b": b, "score": round(score, 3), "shared": common})
    pairs.sort(key=lambda p: (-p["score"], p["a"], p["b"]))
    return pairs
