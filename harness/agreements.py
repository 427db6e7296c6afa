"""The interview's agreements: what the candidate and the interviewer settled about the interface.

The task leaves three questions open and tells the candidate to confirm them: whether
``+`` and ``*`` broadcast, whether ``backward()`` takes an upstream gradient, and whether
a second ``backward()`` accumulates or overwrites. The contract's default is torch's
answer to each; an agreement that departs from it makes the checks of that behaviour
"not required" (skipped, worth nothing), never failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Mapping

from harness.errors import HarnessError

__all__ = ["Agreements", "TERMS", "NOT_REQUIRED", "parse_agreements", "agreements_from_mapping"]


@dataclass(frozen=True)
class Term:
    name: str
    choices: tuple[str, str]
    """The contract's (torch's) answer first, the agreed departure second."""
    feature: str
    """The requirement (``feature:<name>``) of every check that tests the contract's answer."""
    meaning: str


TERMS: Final = {t.name: t for t in (
    Term("broadcasting", ("yes", "no"), "feature:broadcasting", "+ and * broadcast"),
    Term("upstream", ("yes", "no"), "feature:upstream", "backward(grad) takes an upstream gradient"),
    Term("second_backward", ("accumulate", "overwrite"), "feature:passes",
         "a second backward() adds to the leaves' grads"),
)}

NOT_REQUIRED: Final = "not required by the agreed interface"


@dataclass(frozen=True)
class Agreements:
    """The terms stated for one interview, in a fixed order; a term not stated is the contract's answer."""

    terms: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.terms)

    def excuse(self, requires: frozenset[str] | set[str]) -> str | None:
        """The skip message for a check with these requirements, or None when it is required."""
        departed = [f"{name}={value}" for name, value in self.terms
                    if value != TERMS[name].choices[0] and TERMS[name].feature in requires]
        return f"{NOT_REQUIRED} ({', '.join(departed)})" if departed else None

    def over(self, base: Agreements) -> Agreements:
        """These terms, with ``base``'s for the ones not stated here (the command line over the rubric)."""
        merged = {**dict(base.terms), **dict(self.terms)}
        return Agreements(tuple((name, merged[name]) for name in TERMS if name in merged))

    def to_dict(self) -> dict[str, str]:
        return dict(self.terms)

    def describe(self) -> str:
        return ", ".join(f"{name}={value}" for name, value in self.terms)


def parse_agreements(text: str, where: str = "--agree") -> Agreements:
    """``broadcasting=no,upstream=no,second_backward=overwrite`` -> Agreements; HarnessError names the bad term."""
    pairs: dict[str, Any] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise HarnessError(f"{where}: {item!r} is not NAME=VALUE (e.g. broadcasting=no)")
        pairs[name.strip()] = value.strip()
    return agreements_from_mapping(pairs, where)


def agreements_from_mapping(data: Mapping[str, Any], where: str) -> Agreements:
    """Terms from a mapping (a rubric's ``agreements:``); YAML's yes/no booleans are read as yes/no."""
    terms: dict[str, str] = {}
    for name, value in data.items():
        term = TERMS.get(str(name))
        if term is None:
            raise HarnessError(f"{where}: unknown agreement {name!r} (known: {', '.join(TERMS)})")
        if isinstance(value, bool):
            value = "yes" if value else "no"
        if value not in term.choices:
            raise HarnessError(f"{where}: {name} is {' or '.join(term.choices)}, got {value!r}")
        terms[term.name] = str(value)
    return Agreements(tuple((name, terms[name]) for name in TERMS if name in terms))
