"""Similar pairs on the batch page: the table of pairs, and each pair's two sources side by side with the
regions they share marked, as MOSS and Dolos show them.

A pair of the summary carries its ``regions`` (``batch.similarity.matched_regions``: line spans of the
first source paired with line spans of the second); the region numbered k is marked in the same colour
on both sides, and its title says where it is in the other source. Sources are the submissions' own
text, escaped line by line; the longest are cut (``MAX_LINES``), and at most ``MAX_VIEWS`` pairs are shown.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

__all__ = ["similarity_section", "MAX_VIEWS", "MAX_LINES"]

MAX_VIEWS = 50
"""Pairs shown side by side (the most alike first); the table lists every pair."""
MAX_LINES = 2000
"""Lines of a source shown: an engine is a few hundred."""
_COLOURS = 6


def similarity_section(pairs: Sequence[Mapping[str, Any]], sources: Mapping[str, str],
                       e: Callable[[Any], str]) -> list[str]:
    """The "Similar submissions" section: the table, then each pair's side-by-side view (folded)."""
    out = ["<h2>Similar submissions</h2>"]
    if not pairs:
        return out + ['<p class="note">No pair of submissions is alike beyond the threshold.</p>']
    out += ['<p class="note">Alike after names, comments, strings, layout and dead code are set aside, and the '
            "template left out: the share of the smaller submission's fingerprints (winnowed token sequences) "
            "that the other holds too. Open a pair to read both sources side by side, the code they share marked "
            "in matching colours. A lead for a conversation, not a verdict.</p>",
            '<table id="similarity"><thead><tr><th>candidate</th><th>candidate</th><th class="num">score</th>'
            "<th>side by side</th></tr></thead><tbody>"]
    for i, p in enumerate(pairs):
        view = f'<a href="#pair-{i}">compare</a>' if i < MAX_VIEWS else '<span class="note">not shown</span>'
        out.append(f'<tr><td><a href="#c-{e(p["a"])}">{e(p["a"])}</a></td>'
                   f'<td><a href="#c-{e(p["b"])}">{e(p["b"])}</a></td><td class="num">{p["score"]:.2f}</td>'
                   f"<td>{view}</td></tr>")
    out.append("</tbody></table>")
    for i, p in enumerate(pairs[:MAX_VIEWS]):
        out += _pair_view(i, p, sources, e)
    return out


def _pair_view(i: int, pair: Mapping[str, Any], sources: Mapping[str, str], e: Callable[[Any], str]) -> list[str]:
    a, b = str(pair["a"]), str(pair["b"])
    regions = pair.get("regions") or {}
    left, right = list(regions.get("a") or ()), list(regions.get("b") or ())
    shared = sum(last - first + 1 for first, last in left)
    out = [f'<section class="pair" id="pair-{i}"><details><summary><strong>{e(a)}</strong> and '
           f'<strong>{e(b)}</strong>: score {pair["score"]:.2f}, {len(left)} shared regions '
           f"({shared} lines of {e(a)})</summary>", '<div class="sides">']
    for sid, own, other, name in ((a, left, right, b), (b, right, left, a)):
        out.append(f"<div><h4>{e(sid)}</h4>")
        text = sources.get(sid)
        if text is None:
            out.append('<p class="note">The source was not kept with the results.</p></div>')
            continue
        out.append(_marked_source(text, own, other, name, e) + "</div>")
    out.append("</div></details></section>")
    return out


def _marked_source(text: str, own: Sequence[Sequence[int]], other: Sequence[Sequence[int]], other_id: str,
                   e: Callable[[Any], str]) -> str:
    """The source's lines, numbered, each run of a shared region in a ``mark`` of the region's colour."""
    lines = text.splitlines()
    region_of: dict[int, int] = {}
    for k, (first, last) in enumerate(own):
        for n in range(int(first), int(last) + 1):
            region_of.setdefault(n, k)
    parts, open_region = ["<pre>"], None
    for n, line in enumerate(lines[:MAX_LINES], 1):
        region = region_of.get(n)
        if region != open_region:
            if open_region is not None:
                parts.append("</mark>")
            if region is not None:
                where = other[region] if region < len(other) else None
                title = (f"shared region {region + 1}: lines {where[0]}-{where[1]} of {other_id}" if where
                         else f"shared region {region + 1}")
                parts.append(f'<mark class="m{region % _COLOURS}" title="{e(title)}">')
            open_region = region
        parts.append(f'<span class="no">{n}</span>{e(line)}\n')
    if open_region is not None:
        parts.append("</mark>")
    if len(lines) > MAX_LINES:
        parts.append(f"[... {len(lines) - MAX_LINES} more lines ...]\n")
    parts.append("</pre>")
    return "".join(parts)
