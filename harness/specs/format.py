"""The spec case format: its keys and bounds, a spec error with its position, and the case it loads into."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from harness.compare import Tolerance
from harness.concepts import concepts
from harness.lazy_modules import lazy_module
from harness.program import Outcome, Program

torch = lazy_module("torch", globals())


_PACKAGED_SPECS: Final = Path(__file__).resolve().parents[1] / "data" / "specs"
DEFAULT_SPECS_DIR: Final = _PACKAGED_SPECS if _PACKAGED_SPECS.is_dir() else Path(__file__).resolve().parents[2] / "specs"
"""The shipped spec library: the copy an installed package carries (``setup.py`` makes it from the
repository's ``specs/``), or, in a checkout and an editable install, ``specs/`` itself."""

MAX_ELEMENTS: Final = 1_000_000
"""The most elements a tensor of a spec case may hold (an input, or any step's result): 8 MB in float64,
500 times the largest shipped case. Checked before anything is allocated, since the grader reads
spec files in its own process."""
MAX_FILE_BYTES: Final = 1024 * 1024
"""The largest spec file read."""

CONCEPTS: Final = tuple(concepts())
"""The concepts a case may name: the registry ``grade explain`` prints."""
INITS: Final = ("randn", "uniform", "ints", "randint", "zeros", "ones", "arange")

CASE_KEYS: Final = (
    "id", "title", "level", "concepts", "hint", "inputs", "steps", "output", "upstream", "passes", "expect",
    "tolerance", "hidden",
)  # fmt: skip
REQUIRED_CASE_KEYS: Final = ("id", "title", "level", "concepts", "inputs", "output")
INPUT_KEYS: Final = ("value", "shape", "init", "seed", "low", "high", "scale", "dtype", "requires_grad")
UPSTREAM_KEYS: Final = tuple(k for k in INPUT_KEYS if k != "requires_grad")
EXPECT_KEYS: Final = ("output", "grads")
TOLERANCE_KEYS: Final = ("rtol", "atol")

_ID: Final = re.compile(r"[a-z0-9_.-]+")
# Names the author picks; a leading underscore is kept for auto-named intermediates.
_NAME: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# Which init reads which bounds, and their defaults.
_BOUNDS: Final = {"uniform": (0.0, 1.0), "ints": (-3, 3), "randint": (None, None)}


class SpecError(ValueError):
    """A spec that is not valid, with the position (1-based) the problem starts at."""

    def __init__(self, path: str | Path, line: int, column: int, message: str) -> None:
        super().__init__(f"{path}:{line}:{column}: {message}")
        self.path = str(path)
        self.line = line
        self.column = column
        self.message = message

    def __str__(self) -> str:
        if not self.line:  # about a whole file or folder
            return f"{self.path}: {self.message}"
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


@dataclass(frozen=True)
class Expectations:
    """The numbers a spec states explicitly; each was checked against torch when loading."""

    output: torch.Tensor | None = None
    """None when the spec does not state the output."""
    grads: dict[str, torch.Tensor | None] = field(default_factory=dict)
    """Stated leaf gradients; a None value means the gradient must stay None."""


@dataclass(frozen=True)
class SpecCase:
    id: str
    title: str
    level: str
    concepts: tuple[str, ...]
    hint: str | None
    program: Program
    expected: Outcome
    """What torch autograd computes for the program in float64: the oracle."""
    explicit: Expectations | None
    tolerance: Tolerance
    requirements: frozenset[str]
    source: Path
    line: int
    hidden: bool = False
    """Graded and counted, shown to the interviewer, never in what the candidate sees."""


def _float64(value: torch.Tensor) -> torch.Tensor:
    return value.to(torch.float64) if value.is_floating_point() else value


def _generate(init: str, shape: tuple[int, ...], seed: int, low: Any, high: Any) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if init == "randn":
        return torch.randn(shape, generator=generator, dtype=torch.float64)
    if init == "uniform":
        return torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low
    if init == "ints":
        return torch.randint(int(low), int(high) + 1, shape, generator=generator, dtype=torch.int64)
    if init == "randint":
        return torch.randint(0, int(high), shape, generator=generator, dtype=torch.int64)
    if init == "zeros":
        return torch.zeros(shape, dtype=torch.int64)
    if init == "ones":
        return torch.ones(shape, dtype=torch.int64)
    return torch.arange(math.prod(shape), dtype=torch.int64).reshape(shape)


def _recipe(init: str, shape: tuple[int, ...], seed: int, low: Any, high: Any) -> str:
    """Python that rebuilds ``_generate``'s tensor bit for bit (for snippets too large to spell out)."""
    generator = f"torch.Generator().manual_seed({seed})"
    size = repr(tuple(shape))
    if init == "randn":
        return f"torch.randn({size}, generator={generator}, dtype=torch.float64)"
    if init == "uniform":
        return f"(torch.rand({size}, generator={generator}, dtype=torch.float64) * ({high!r} - {low!r}) + {low!r})"
    if init == "ints":
        return f"torch.randint({int(low)}, {int(high) + 1}, {size}, generator={generator}, dtype=torch.int64)"
    if init == "randint":
        return f"torch.randint(0, {int(high)}, {size}, generator={generator}, dtype=torch.int64)"
    if init in ("zeros", "ones"):
        return f"torch.{init}({size}, dtype=torch.int64)"
    return f"torch.arange({math.prod(shape)}, dtype=torch.int64).reshape({size})"
