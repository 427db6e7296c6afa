"""Hostile: 1,500 nested folders in the working folder and 3,000 in the submission's, some unreadable.

Recursive cleanup (shutil.rmtree) runs out of recursion on them, and a folder without
permissions stops a cleanup that does not expect it.
"""

import os

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)


def nest(top, depth):
    here = os.getcwd()
    try:
        os.mkdir(top)
        os.chdir(top)
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
        with open("leaf", "w") as f:
            f.write("x")
    except OSError:
        pass
    finally:
        os.chdir(here)


def attack():
    nest("deep", 1500)
    os.mkdir("locked")
    os.chmod("locked", 0)
    nest(os.path.join("..", f"deeper-{os.getpid()}"), 3000)


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
