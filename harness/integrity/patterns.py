"""The reads a ``match`` statement's patterns make, written out as the expressions they stand for.

``case object(_C=c)`` reads ``subject._C``; ``case {"k": v}`` reads ``subject["k"]``; an item of a
sequence pattern, or a positional part of a class pattern, is ``subject[i]`` (which the scan does
not resolve further: the attributes ``__match_args__`` names are judged where it is set). The
expressions carry the pattern's line, so a finding points at the ``case``.
"""

from __future__ import annotations

import ast

__all__ = ["pattern_reads"]


def pattern_reads(node: ast.Match) -> list[ast.expr]:
    """Every attribute or item read by the patterns of ``node``, outermost first."""
    reads: list[ast.expr] = []
    for case in node.cases:
        _walk(case.pattern, node.subject, reads)
    return reads


def _walk(pattern: ast.pattern | None, subject: ast.expr, reads: list[ast.expr]) -> None:
    if isinstance(pattern, ast.MatchClass):
        for attr, sub in zip(pattern.kwd_attrs, pattern.kwd_patterns):
            _walk(sub, _read(ast.Attribute(value=subject, attr=attr, ctx=ast.Load()), sub, reads), reads)
        for i, sub in enumerate(pattern.patterns):
            _walk(sub, _read(ast.Subscript(value=subject, slice=ast.Constant(i), ctx=ast.Load()), sub, reads), reads)
    elif isinstance(pattern, ast.MatchMapping):
        for key, sub in zip(pattern.keys, pattern.patterns):
            _walk(sub, _read(ast.Subscript(value=subject, slice=key, ctx=ast.Load()), sub, reads), reads)
    elif isinstance(pattern, ast.MatchSequence):
        for i, sub in enumerate(pattern.patterns):
            _walk(sub, _read(ast.Subscript(value=subject, slice=ast.Constant(i), ctx=ast.Load()), sub, reads), reads)
    elif isinstance(pattern, ast.MatchAs):
        _walk(pattern.pattern, subject, reads)
    elif isinstance(pattern, ast.MatchOr):
        for sub in pattern.patterns:
            _walk(sub, subject, reads)


def _read(read: ast.expr, where: ast.pattern, reads: list[ast.expr]) -> ast.expr:
    ast.copy_location(read, where)
    reads.append(read)
    return read
