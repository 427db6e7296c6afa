"""Hostile: runaway output, 16 MiB on each of stdout and stderr at import and 8 MiB more per request.

Lines of a megabyte without a newline among them. The grader drains the pipes and keeps
a few kilobytes; it must neither grow nor stall.
"""

import os

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)

CHUNK = b"y" * (1 << 20)


def flood(mebibytes):
    for i in range(mebibytes):
        for fd in (1, 2):
            os.write(fd, CHUNK if i % 4 else CHUNK + b"\n")


flood(16)


def during_backward():
    flood(8)


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
