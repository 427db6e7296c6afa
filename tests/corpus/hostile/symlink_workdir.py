"""Hostile: symlinks in the working folder to the host's files, loops, and the next workers' folders.

A grader that cleans up by following links deletes what they point to; the tests put a
canary folder at /tmp/grader-hostile-canary-<mark> and check that it survives. Links named
w1..w60 take the names of later workers' folders.
"""

import os

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)


def attack():
    canary = f"/tmp/grader-hostile-canary-{MARK or 0}"
    targets = {"root": "/", "etc": "/etc", "passwd": "/etc/passwd", "canary": canary,
               "canary_file": os.path.join(canary, "keep.txt"), "loop": "loop", "up": "../../../../..",
               "stdout.txt": "/dev/stdout", "report.json": canary}
    for folder in (".", ".."):
        for name, target in targets.items():
            try:
                os.symlink(target, os.path.join(folder, name))
            except OSError:
                pass
    for n in range(1, 61):
        try:
            os.symlink(canary, os.path.join("..", f"w{n}"))
        except OSError:
            pass
    try:
        os.unlink(__file__)
        os.symlink(canary, __file__)
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
