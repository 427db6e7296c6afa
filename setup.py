"""The build's one addition to pyproject.toml: the spec library ships inside the package.

The repository's top-level ``specs/`` is where spec authors write cases; a wheel (or a regular
``pip install .``) carries a copy as ``harness/data/specs``, which the grader reads when it is
there (``harness.specs.format.DEFAULT_SPECS_DIR``). An editable install reads ``specs/`` itself.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SPECS = Path(__file__).resolve().parent / "specs"


class BuildWithSpecs(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not any(SPECS.glob("**/*.yaml")):
            raise SystemExit(f"{SPECS}: no spec files to ship (a source tree without its spec library)")
        target = Path(self.build_lib) / "harness" / "data" / "specs"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(SPECS, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithSpecs})
