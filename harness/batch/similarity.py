"""Pairs of submissions whose code is alike once names, comments, strings, layout and padding are set aside.

Each source is parsed and normalised first: statements that cannot matter are
dropped (``pass``, bare constants and names, code after a ``return``, ``raise``,
``break`` or ``continue``, the body of ``if False``, definitions and assignments
nothing reads), so padding a copy with dead code or ``;pass`` after each statement
changes nothing. What is left is written out again (one layout for everyone) and
becomes a token stream in which every identifier is ``N``, every string ``S`` and
every number ``0``. Its token k-grams are hashed and winnowed, as MOSS and Dolos
do: the smallest hash of each window of consecutive k-grams is the source's
fingerprint, so any run of ``NGRAM + WINDOW - 1`` tokens two sources share is
found. Fingerprints of the candidate template are left out first, since every
candidate starts from it.

A pair's score is the share of the smaller submission's fingerprints found in the
other (padding the larger one cannot lower it), weighed by their sizes once the
larger is more than ``FREE_RATIO`` times the smaller: a file made of many
engines holds most of any engine's common idioms, and that is no sign it holds a
copy. A notebook is compared by its code cells (``harness.notebooks``), so a copy
handed in as a notebook is found too. Input is bounded (``MAX_BYTES`` of source,
``MAX_TOKENS`` tokens), so one huge file cannot hold the batch up.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import itertools
import keyword
import token
import tokenize
from collections import Counter
from importlib import resources
from typing import Iterable, Mapping, Sequence

from harness.notebooks import notebook_source

__all__ = ["fingerprint", "normalised_tokens", "placed_tokens", "matched_regions", "similar_pairs", "pair_score",
           "code_of", "NGRAM", "WINDOW", "THRESHOLD", "MAX_BYTES", "MAX_TOKENS", "FREE_RATIO"]

NGRAM = 8
"""Tokens per k-gram: long enough that two unrelated engines share few, short enough to survive small edits."""
WINDOW = 4
"""K-grams per winnowing window: every shared run of NGRAM + WINDOW - 1 tokens yields a shared fingerprint."""
THRESHOLD = 0.6
"""Pairs at or above this score are reported."""
MIN_FINGERPRINTS = 12
"""A submission with fewer fingerprints (beyond the template) is too small to call a copy of anything."""
MAX_BYTES = 256 * 1024
"""Source compared, at most: a hand-written engine is a few kilobytes."""
MAX_TOKENS = 60_000
"""Tokens compared per source, at most."""
FREE_RATIO = 10
"""A copy may sit in a file up to this many times its size at full score; beyond, the score is scaled by the
ratio of sizes (a file twenty times larger scores at most one half against the smaller)."""
_SKIP = {token.COMMENT, token.NL, token.NEWLINE, token.INDENT, token.DEDENT, token.ENCODING, token.ENDMARKER,
         token.TYPE_COMMENT}
_FSTRING_START = getattr(token, "FSTRING_START", -1)
_FSTRING = {getattr(token, name) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(token, name)}


def normalised_tokens(source: str) -> list[str]:
    """The source's tokens with names, strings and numbers made anonymous; stops quietly at a syntax error."""
    return [text for text, _, _ in placed_tokens(source)]


def placed_tokens(source: str) -> list[tuple[str, int, int]]:
    """``normalised_tokens`` with the lines (first, last; 1-based) each token spans in ``source``."""
    out: list[tuple[str, int, int]] = []
    previous = ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source[:MAX_BYTES]).readline):
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
            out.append((text, tok.start[0], tok.end[0]))
            previous = text
            if len(out) >= MAX_TOKENS:
                break
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def without_padding(source: str) -> str:
    """The source with every statement that cannot matter dropped, written out in one layout.

    A source that does not parse is returned as it is (its tokens still count).
    """
    source = source[:MAX_BYTES]
    try:
        tree = ast.parse(source)
        for _ in range(4):  # a definition only dead code used is dead once that code is gone
            used = _names_read(tree)
            if not _Prune(used).prune(tree):
                break
        return ast.unparse(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source


def _names_read(tree: ast.AST) -> set[str]:
    """Every name the code reads: loaded names, attributes, names in ``__all__`` strings and decorators."""
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            used.add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            used.add(node.value)  # getattr(self, "name"), __all__
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            used.update(node.names)
    return used


class _Prune:
    """Drops dead statements from every block of a tree; ``prune`` says whether it dropped any."""

    def __init__(self, used: set[str]) -> None:
        self.used = used
        self.changed = False

    def prune(self, tree: ast.AST) -> bool:
        for node in ast.walk(tree):
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    kept = self._block(block)
                    if not kept and name == "body":
                        kept = [ast.Pass()]  # a block must hold a statement; one pass is the same everywhere
                    setattr(node, name, kept)
        return self.changed

    def _block(self, block: list[ast.stmt]) -> list[ast.stmt]:
        kept: list[ast.stmt] = []
        for stmt in block:
            replaced = self._statement(stmt)
            self.changed = self.changed or replaced != [stmt]
            kept += replaced
            if isinstance(stmt, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
                self.changed = self.changed or stmt is not block[-1]
                break  # the rest of the block never runs
        return kept

    def _statement(self, stmt: ast.stmt) -> list[ast.stmt]:
        if isinstance(stmt, ast.Pass):
            return []
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, (ast.Constant, ast.Name)):
            return []  # docstrings, a bare name or number
        if isinstance(stmt, (ast.If, ast.While)) and isinstance(stmt.test, ast.Constant):
            if not stmt.test.value:
                return [s for s in stmt.orelse if not isinstance(s, ast.Pass)]
            if isinstance(stmt, ast.If):
                return list(stmt.body)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not _dunder(stmt.name) and stmt.name not in self.used:
                return []
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if all(isinstance(t, ast.Name) and not _dunder(t.id) and t.id not in self.used for t in targets):
                return []
        return [stmt]


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def code_of(source: str) -> str:
    """The Python a submission holds: a notebook's code cells, any other file as it is."""
    if source.lstrip().startswith("{"):
        try:
            return notebook_source(source[:MAX_BYTES].encode("utf-8", errors="replace"))[0]
        except ValueError:  # not a notebook after all: compared as the text it is
            pass
    return source


def fingerprint(source: str, n: int = NGRAM, window: int = WINDOW) -> set[int]:
    """The winnowed hashes of the normalised source's token k-grams (a notebook's: of its code cells)."""
    tokens = normalised_tokens(without_padding(code_of(source)))
    hashes = [_hash(tokens[i:i + n]) for i in range(max(0, len(tokens) - n + 1))]
    if len(hashes) <= window:
        return set(hashes)
    chosen = set()
    for i in range(len(hashes) - window + 1):
        chunk = hashes[i:i + window]
        chosen.add(min(chunk))
    return chosen


def _hash(gram: list[str]) -> int:
    """A k-gram's hash, the same in every process (Python's own string hash is salted per process)."""
    return int.from_bytes(hashlib.blake2b(" ".join(gram).encode(), digest_size=8).digest(), "big")


def pair_score(common: int, size_a: int, size_b: int) -> float:
    """The share of the smaller one's fingerprints the other holds too, scaled by ``min(1, FREE_RATIO * smaller /
    larger)``: both directions' containment count once the sizes are far apart."""
    smaller, larger = sorted((size_a, size_b))
    if smaller == 0:
        return 0.0
    return common / smaller * min(1.0, FREE_RATIO * smaller / larger)


def _template() -> set[int]:
    try:
        return fingerprint(resources.files("candidate_template").joinpath("solution.py").read_text())
    except (OSError, ModuleNotFoundError):
        return set()


def similar_pairs(sources: Mapping[str, str], threshold: float = THRESHOLD,
                  base: Iterable[int] | None = None) -> list[dict[str, object]]:
    """Pairs ``{"a", "b", "score", "shared"}`` scoring >= ``threshold``, most alike first.

    ``score`` is ``pair_score``; ``shared`` counts the fingerprints both hold. ``base`` holds
    fingerprints to ignore (default: the candidate template's). Uses an inverted index, so
    only pairs that share a fingerprint are ever compared.
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
        if min(len(prints[a]), len(prints[b])) < MIN_FINGERPRINTS:
            continue
        score = pair_score(common, len(prints[a]), len(prints[b]))
        if score >= threshold:
            pairs.append({"a": a, "b": b, "score": round(score, 3), "shared": common})
    pairs.sort(key=lambda p: (-p["score"], p["a"], p["b"]))
    return pairs


_PADDING = {"pass", ";"}
"""Tokens a copy can be padded with that never change what the code does: left out of the matched runs."""
_CANDIDATES = 16
"""Places of the other source tried for each k-gram: bounds the work on repetitive code."""


def matched_regions(a: str, b: str, base: str | None = None) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where ``a`` and ``b`` hold the same code, for showing a pair side by side (as MOSS and Dolos do): the
    runs of at least ``NGRAM + WINDOW - 1`` anonymous tokens (the shortest run the score is sure to see) the two
    share, as pairs of line spans ``((first, last) in a, (first, last) in b)`` in ``a``'s order.

    Runs are found greedily from the start of ``a`` (greedy string tiling): each run is the longest
    that starts there and uses no token of ``b`` already matched. A run must start outside ``base`` (the
    candidate template, by default), which every candidate shares. Padding (``pass``, ``;``) is skipped.
    """
    template = _template_grams() if base is None else set(_tokens_and_grams(base)[1])
    (left, grams), (right, right_grams) = _tokens_and_grams(a), _tokens_and_grams(b)
    ta, tb = [t for t, _, _ in left], [t for t, _, _ in right]
    places: dict[int, list[int]] = {}
    for j, gram in enumerate(right_grams):
        places.setdefault(gram, []).append(j)
    shortest = NGRAM + WINDOW - 1
    used = [False] * len(tb)
    regions = []
    i = 0
    while i < len(grams):
        best, where = 0, -1
        if grams[i] not in template:
            for j in places.get(grams[i], ())[:_CANDIDATES]:
                length = 0
                while (i + length < len(ta) and j + length < len(tb) and not used[j + length]
                       and ta[i + length] == tb[j + length]):
                    length += 1
                if length > best:
                    best, where = length, j
        if best < shortest:
            i += 1
            continue
        used[where:where + best] = [True] * best
        regions.append(((left[i][1], left[i + best - 1][2]), (right[where][1], right[where + best - 1][2])))
        i += best
    return regions


_CACHED_BYTES = 64 * 1024
"""Sources up to this size keep their tokens between pairs (32 of them at most: a few MB)."""


def _tokens_and_grams(source: str) -> tuple[tuple[tuple[str, int, int], ...], tuple[int, ...]]:
    """A source's tokens without padding and their k-gram hashes (an engine in many pairs is read once)."""
    return _prepared(source) if len(source) <= _CACHED_BYTES else _prepare(source)


def _prepare(source: str) -> tuple[tuple[tuple[str, int, int], ...], tuple[int, ...]]:
    tokens = tuple(t for t in placed_tokens(source) if t[0] not in _PADDING)
    return tokens, tuple(_grams(tokens))


_prepared = functools.lru_cache(maxsize=32)(_prepare)


def _grams(tokens: Sequence[tuple[str, int, int]]) -> list[int]:
    texts = [t for t, _, _ in tokens]
    return [_hash(texts[i:i + NGRAM]) for i in range(max(0, len(texts) - NGRAM + 1))]


@functools.lru_cache(maxsize=1)
def _template_grams() -> frozenset[int]:
    try:
        return frozenset(_prepare(resources.files("candidate_template").joinpath("solution.py").read_text())[1])
    except (OSError, ModuleNotFoundError):
        return frozenset()
