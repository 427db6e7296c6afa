"""The interview concepts behind the checks: what each one teaches, at four depths.

Every check names a concept; ``grade explain CONCEPT`` prints it. The texts live in
``harness/data/concepts.yaml`` (data, like the rubric), each with a tiny example
that runs with torch alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Final, Mapping

import yaml

from harness.errors import HarnessError, did_you_mean
from harness.terminal import DEFAULT_WIDTH, wrap

__all__ = ["Concept", "DEPTHS", "concepts", "concept", "explain_line", "with_explain_line", "render_concept", "render_list",
           "markdown_table", "DOCS_BLOCK"]

DEPTHS: Final = ("junior", "middle", "senior", "principal")
_KEYS: Final = ("title", "question", *DEPTHS, "example")


@dataclass(frozen=True)
class Concept:
    name: str
    title: str
    question: str
    """What an interviewer asks about it: the first help a practice session reveals."""
    depths: Mapping[str, str]
    example: str


@functools.lru_cache(maxsize=1)
def concepts() -> dict[str, Concept]:
    """Every known concept by name, in the data file's order."""
    data = yaml.safe_load(resources.files("harness").joinpath("data", "concepts.yaml").read_text())
    out = {}
    for name, entry in data.items():
        missing = [k for k in _KEYS if not entry.get(k)]
        if missing:  # shipped data: a broken entry is the grader's bug, caught by its tests
            raise ValueError(f"concepts.yaml: {name} lacks {', '.join(missing)}")
        out[name] = Concept(name, entry["title"], entry["question"], {d: entry[d] for d in DEPTHS},
                            entry["example"].rstrip() + "\n")
    return out


def concept(name: str) -> Concept:
    known = concepts()
    if name not in known:
        raise HarnessError(f"unknown concept {name!r}{did_you_mean(name, known)}; `grade explain` lists them "
                           f"({', '.join(known)})")
    return known[name]


def explain_line(name: str) -> str:
    """The sentence that ends a failing check's hint."""
    return f"Read `grade explain {name}`."


def with_explain_line(hint: str | None, name: str) -> str:
    """``hint`` ended as a sentence, then ``explain_line``: how every hint of a failure ends."""
    hint = (hint or "").rstrip()
    if hint and not hint.endswith((".", "!", "?", ")")):
        hint += "."
    return f"{hint} {explain_line(name)}".strip()


def render_list(width: int = DEFAULT_WIDTH) -> str:
    names = max(len(name) for name in concepts())
    lines = [*wrap("Concepts (grade explain CONCEPT [--depth junior|middle|senior|principal]):", width, "", "  "), ""]
    for c in concepts().values():
        lines += wrap(f"{c.name:<{names}}  {c.title}", width, "  ", " " * (names + 4))
    return "\n".join(lines)


def render_concept(name: str, depth: str | None = None, width: int = DEFAULT_WIDTH) -> str:
    """The explanation at every depth (or one), the interview question and the runnable example, ``width`` wide
    (the example's code as it is: it runs)."""
    c = concept(name)
    lines = [*wrap(f"{c.name}: {c.title}", width, "", "  "), "", *wrap(f"Question: {c.question}", width, "", "  ")]
    for d in (depth,) if depth else DEPTHS:
        lines += ["", *wrap(f"{d}: {' '.join(c.depths[d].split())}", width, "", "  ")]
    lines += ["", "Example (runs with torch alone):"] + ["  " + line for line in c.example.splitlines()]
    return "\n".join(lines)


DOCS_BLOCK: Final = ("<!-- concepts: generated from harness/data/concepts.yaml by `python -m harness.concepts "
                     "docs/specs.md` -->", "<!-- end of concepts -->")
"""The lines around the concept table of a document, which ``python -m harness.concepts FILE`` writes again."""


def markdown_table() -> list[str]:
    """Every concept as a row of a Markdown table: its name and what it is about."""
    return ["| concept | what it is about |", "|---|---|",
            *(f"| `{c.name}` | {c.title} |" for c in concepts().values())]


def with_table(document: str) -> str:
    """``document`` with the table between the ``DOCS_BLOCK`` lines written from the concepts."""
    start, end = DOCS_BLOCK
    head, found, rest = document.partition(start + "\n")
    _, found_end, tail = rest.partition(end)
    if not found or not found_end:
        raise ValueError(f"no '{start}' ... '{end}' block")
    return head + start + "\n" + "\n".join(markdown_table()) + "\n" + end + tail


if __name__ == "__main__":
    import sys
    from pathlib import Path

    for name in sys.argv[1:]:
        Path(name).write_text(with_table(Path(name).read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote the concept table of {name}")
