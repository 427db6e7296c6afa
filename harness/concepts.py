"""The interview concepts behind the checks: what each one teaches, at four depths.

Every check names a concept; ``grade explain CONCEPT`` prints it. The texts live in
``harness/data/concepts.yaml`` (data, like the rubric), each with a tiny example
that runs with torch alone.
"""

from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass
from importlib import resources
from typing import Final, Mapping

import yaml

from harness.errors import HarnessError

__all__ = ["Concept", "DEPTHS", "concepts", "concept", "explain_line", "with_explain_line", "render_concept", "render_list"]

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
        raise HarnessError(f"unknown concept {name!r}; `grade explain` lists them ({', '.join(known)})")
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


def render_list() -> str:
    width = max(len(name) for name in concepts())
    lines = ["Concepts (grade explain CONCEPT [--depth junior|middle|senior|principal]):", ""]
    lines += [f"  {c.name:<{width}}  {c.title}" for c in concepts().values()]
    return "\n".join(lines)


def render_concept(name: str, depth: str | None = None) -> str:
    """The explanation at every depth (or one), the interview question and the runnable example."""
    c = concept(name)
    lines = [f"{c.name}: {c.title}", "", f"Question: {c.question}"]
    for d in (depth,) if depth else DEPTHS:
        lines += ["", f"{d}:"] + textwrap.wrap(c.depths[d], 88, initial_indent="  ", subsequent_indent="  ")
    lines += ["", "Example (runs with torch alone):", ""] + ["  " + line for line in c.example.splitlines()]
    return "\n".join(lines)
