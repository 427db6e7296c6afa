"""Hostile: FIFOs where the grader might read or create files: its output files, the module, the next workers' folders.

A grader that reads stdout.txt from a folder the worker controls blocks forever on a
FIFO. FIFOs named w1..w60 next to the worker's own folder take the names later workers
would get. (The module file itself is left alone: the worker reads it for tracebacks, so a
FIFO there only makes this submission's own requests time out.)
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
    for name in ("stdout.txt", "stderr.txt", "report.json", "output.txt", "result.json"):
        for folder in (".", ".."):
            try:
                os.mkfifo(os.path.join(folder, name))
            except OSError:
                pass
    for n in range(1, 61):
        try:
            os.mkfifo(os.path.join("..", f"w{n}"))
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
