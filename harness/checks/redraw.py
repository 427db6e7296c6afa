"""``python -m harness.checks.redraw``: draw the shipped programs again (harness/data/examples/).

Run it after changing an op, a strategy, the default searches or the pinned hypothesis:
tests/checks/test_examples.py fails, naming this command, while the shipped programs are stale.
It lives apart from examples.py, which properties.py imports, so that neither imports the other.
"""

from pathlib import Path

from harness.checks.examples import SHIPPED, write_shipped
from harness.checks.properties import default_searches


def main() -> None:
    for old in SHIPPED.glob("*.json.gz"):
        old.unlink()
    for path in write_shipped(default_searches()):
        print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)


if __name__ == "__main__":
    main()
