"""Hostile: poison the bytecode caches the grader loads instead of its sources.

A .pyc in a __pycache__ folder next to a harness or torch module is loaded when its
stamp matches. Existing caches are only opened for appending; new ones carry the mark.
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


def attack():
    harness = sys.modules.get("harness")
    folders = list(getattr(harness, "__path__", [])) + [os.path.dirname(torch.__file__)]
    for folder in folders:
        for root, dirs, files in os.walk(folder):
            if root.count(os.sep) - folder.count(os.sep) >= 2:
                dirs[:] = []  # deep enough: harness's subpackages and torch's top level
            if os.path.basename(root) == "__pycache__":
                for name in files[:50]:
                    could_write(os.path.join(root, name))
                plant(os.path.join(root, f"zz_planted_{MARK}.cpython-311.pyc"), "not bytecode\n")
            elif "__pycache__" not in dirs:
                try:
                    os.mkdir(os.path.join(root, "__pycache__"))
                    escaped(f"created {root}/__pycache__")
                    os.rmdir(os.path.join(root, "__pycache__"))
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
