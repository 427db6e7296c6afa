"""YAML spec cases: the loader, and the expression compiler (the `grade spec` commands are harness/cli/spec.py)."""

from harness.specs.loader import *  # noqa: F403 -- the loader's public names are the package's
from harness.specs.loader import __all__  # noqa: F401
