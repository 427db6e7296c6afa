"""YAML spec cases: the loader, and the expression compiler (the `grade spec` commands are harness/cli/spec.py).

format.py (the case format and the case it loads into), yaml_nodes.py (YAML read with positions),
cases.py (one case: validated, built, checked against torch), loader.py (files: parse, check, load;
its public names are the package's)."""

from harness.specs.loader import *  # noqa: F403 -- the loader's public names are the package's
from harness.specs.loader import __all__  # noqa: F401
