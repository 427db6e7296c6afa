"""One ``Check`` type for every check a grade runs, and the registry of the declared ones.

A check is a function of the ``Context`` it runs in, with what the report needs to say
about it: its id, level and interview concept, its title and hint. The targeted checks,
the property checks and the saved-tensor audit declare theirs with ``@check`` (the
docstring's first line is the title, the rest the hint); spec cases compile into the
same type (``harness.specs.as_checks``). A ``Check`` refuses a level the vocabulary does
not have and a concept ``grade explain`` does not know, wherever it is built.

``registered()`` is the list of declared checks, in the order they run inside a level:
it imports the modules that declare them, named here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Final

from harness.concepts import concepts
from harness.vocabulary import LEVELS

__all__ = ["Check", "check", "registered"]


@dataclass(frozen=True)
class Check:
    id: str
    level: str
    concept: str
    title: str
    hint: str | None
    requires: frozenset[str]
    """Members (``relu``) and features (``feature:no_grad``) the candidate needs to attempt it."""
    timeout: float
    """Seconds for the whole check."""
    run: Callable[[Any], None]
    """Passes by returning, fails by raising ``Failed``, errs by raising ``CandidateError`` or
    ``CandidateTimeout`` (see ``harness.checks.context``)."""
    cost: float = 1.0
    """Rough seconds on a correct engine: the grader starts the costliest checks first."""
    isolated: bool = True
    """Runs in a fresh worker. Checks that only run graph programs may share one, as spec cases do:
    starting a worker would cost more than they do."""
    graph: tuple[Any, Any] | None = None
    """(program, torch's outcome) for a check that runs one fixed graph: the diagnosis reads
    passing ones to tell bugs apart."""
    hidden: bool = False
    """A spec case the author hid: graded and counted, never shown to the candidate."""

    def __post_init__(self) -> None:
        _refuse_unknown(self.id, self.level, self.concept)


def _refuse_unknown(id: str, level: str, concept: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"check {id}: unknown level {level!r}; one of {', '.join(LEVELS)}")
    if concept not in concepts():
        raise ValueError(f"check {id}: unknown concept {concept!r}: add it to harness/data/concepts.yaml")


_DECLARED: Final[list[Check]] = []


def check(id: str, level: str, concept: str, *, requires: frozenset[str] | set[str] = frozenset(),
          timeout: float = 30.0, cost: float = 0.1,
          isolated: bool = True) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    """Declare a check run by the decorated function; its docstring gives the title and the hint."""

    def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        title, hint = _title_and_hint(fn.__doc__, id)
        _DECLARED.append(Check(id, level, concept, title, hint, frozenset(requires), timeout, fn, cost, isolated))
        return fn

    _refuse_unknown(id, level, concept)  # at the declaration, before any function is decorated
    return register


def _title_and_hint(doc: str | None, id: str) -> tuple[str, str | None]:
    lines = [line.strip() for line in (doc or id).strip().splitlines()]
    return lines[0], " ".join(line for line in lines[1:] if line) or None


def registered() -> list[Check]:
    """Every declared check: by declaring module in the order listed here, then in declaration order.

    The order is the report's inside each level, whichever module a process happened to import first.
    """
    from harness.checks import properties, saved_tensors, targeted, ties

    modules = [m.__name__ for m in (targeted, ties, properties, saved_tensors)]
    unlisted = sorted({c.run.__module__ for c in _DECLARED} - set(modules))
    if unlisted:
        raise ValueError(f"checks declared in {', '.join(unlisted)}: list the module in registered()")
    return sorted(_DECLARED, key=lambda c: modules.index(c.run.__module__))
