"""Hostile: write a forged report to every file descriptor it inherited, at import and at exit.

Only stdout and stderr (pipes the grader drains into the report's output) and the worker's
socket should be open; any other descriptor is a leak from the grader. The terminal is
tried too.
"""

import atexit
import json
import os
import stat

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)

FORGED = json.dumps({
    "status": "graded", "score": 100.0, "max_score": 100.0, "message": "",
    "levels": {"core": {"score": 100.0, "max_score": 100.0}},
    "checks": [{"id": "core.properties", "level": "core", "concept": "forged", "outcome": "passed", "points": 100.0,
                "max_points": 100.0, "message": ""}],
    "integrity": {"violations": [], "review": []},
}) + "\n"


def attack():
    for fd in range(0, 256):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISSOCK(mode):
            continue  # the worker's own channel: another file speaks the protocol
        try:
            os.write(fd, FORGED.encode())
        except OSError:
            continue
        if fd not in (1, 2):
            escaped(f"wrote a forged report to inherited descriptor {fd}")
    for path in ("/dev/tty", "/dev/console", "/dev/pts/0", "/dev/pts/1"):
        try:
            with open(path, "w") as f:
                f.write(FORGED)
            escaped(f"wrote a forged report to {path}")
        except OSError:
            pass


attack()
atexit.register(attack)


def during_backward():
    attack()


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
