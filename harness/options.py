"""The options of one grade: what the command line, a batch or a test asks the grader for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.agreements import Agreements

__all__ = ["GradeOptions"]


@dataclass(frozen=True)
class GradeOptions:
    level: str = "all"
    seed: int = 0
    class_name: str = "Tensor"
    pick_class: bool = False
    """When the file binds no ``class_name`` but defines exactly one class that looks like an engine, grade that
    one (``grade FILE`` without ``--class-name``); the report's header names it."""
    specs: tuple[Path, ...] = ()
    """Spec folders or files added to the shipped library (with ``replace_specs``, used instead of it)."""
    replace_specs: bool = False
    rubric: Path | None = None
    max_examples: int = 200
    """Hypothesis examples for the core property check (the others draw a share of it)."""
    time_limit: float = 600.0
    """Seconds for the whole grade, start-up and clean-up included: then the sandbox is killed."""
    memory_mb: int = 2048
    isolation: str = "auto"
    """"auto" (bubblewrap when it works), "sandbox" (bubblewrap or refuse) or "basic"."""
    levels: tuple[str, ...] = ()
    """Only the checks of these levels (with ``level="all"``); empty means every level ``level`` allows."""
    agreements: Agreements = Agreements()
    """What the interview agreed about the interface; over the rubric's agreements, term by term."""
    variant: str = "tensor"
    """"tensor" (the whole engine is the candidate's) or "function" (each op a torch.autograd.Function)."""
    follow_links: bool = True
    """Whether a submission file may be a symbolic link: a batch's never may (its candidates chose the files)."""
