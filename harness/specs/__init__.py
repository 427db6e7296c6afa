"""YAML spec cases: the loader, the expression compiler, and the `grade spec` commands."""

from harness.specs.loader import *  # noqa: F403 -- the loader's public names are the package's
from harness.specs.loader import __all__  # noqa: F401
