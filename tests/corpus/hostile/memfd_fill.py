"""Hostile: hold memory outside every per-process limit in memfd files.

Writing to a memfd maps nothing, so RLIMIT_AS does not count it, and it lives in no
size-limited tmpfs. Eight files of 16 MiB (128 MiB at most).
"""

import os

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)

LIMIT = 64 << 20
HELD = []


def attack():
    chunk, held = b"m" * (1 << 20), 0
    for n in range(8):
        try:
            fd = os.memfd_create(f"hold-{n}")
            for _ in range(16):
                os.write(fd, chunk)
                held += len(chunk)
        except OSError:
            break
        HELD.append(fd)
    print(f"held {held >> 20} MiB in memfd files", flush=True)
    if held > LIMIT:
        escaped(f"held {held >> 20} MiB in memfd files")


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
