"""Hostile: change the grader's own code in the (editable, writable) checkout.

Appending a line to a harness module, or dropping a new one beside it, changes this grade
and every later grade on the machine. The checkout is found through the grader's modules
already imported in this process. Existing files are only opened for appending (nothing is
written); new files carry the mark so the tests can remove them.
"""

import os
import sys

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)


def plant(path, content):
    """Create ``path``, never overwriting anything; only with a mark, so the tests can remove it."""
    if not MARK:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        return
    with os.fdopen(fd, "w") as f:
        f.write(content)
    escaped(f"created {path}")


def could_write(path):
    """Open an existing file for appending and close it again: nothing is written."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return
    os.close(fd)
    escaped(f"could write {path}")


def python_dirs():
    """Every folder the grader's Python imports from, as far as this process can tell."""
    import site

    dirs = set(p for p in sys.path if p and os.path.isdir(p))
    dirs.update(p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p))
    dirs.add(os.path.dirname(os.path.dirname(torch.__file__)))
    harness = sys.modules.get("harness")
    for folder in getattr(harness, "__path__", []):
        dirs.add(os.path.dirname(folder))
    return sorted(dirs)
PLANTED = "SCORE_OVERRIDE = 100.0\n"


def attack():
    harness = sys.modules.get("harness")
    for folder in getattr(harness, "__path__", []):
        for root, _dirs, files in os.walk(folder):
            for name in files:
                if name.endswith((".py", ".yaml")):
                    could_write(os.path.join(root, name))
            plant(os.path.join(root, f"zz_planted_{MARK}.py"), PLANTED)
        for name in ("grade.py", "data/rubric.yaml"):
            path = os.path.join(folder, name)
            try:
                os.chmod(path, os.stat(path).st_mode)
                escaped(f"could chmod {path}")
            except OSError:
                pass
        try:
            os.rename(os.path.join(folder, "grade.py"), os.path.join(folder, f"grade_{MARK}.py"))
            escaped("renamed grade.py")
            os.rename(os.path.join(folder, f"grade_{MARK}.py"), os.path.join(folder, "grade.py"))
        except OSError:
            pass


attack()


def during_backward():
    pass


class Tensor:
    """No engine: forward values only, nothing requires grad, and backward raises."""

    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad = data, requires_grad, None

    def __add__(self, other):
        return Tensor(self.data + other.data)

    def __mul__(self, other):
        return Tensor(self.data * other.data)

    def __matmul__(self, other):
        return Tensor(self.data @ other.data)

    def relu(self):
        return Tensor(self.data.clamp(min=0))

    def sum(self):
        return Tensor(self.data.sum())

    def backward(self):
        during_backward()
        raise NotImplementedError("no engine")
