"""Hostile: a process that re-forks every millisecond, always one pid ahead of a /proc snapshot.

Cleanup that lists processes and then kills them never catches it; only killing a whole pid
namespace does. Each generation tries to write a forged report to the grader's stdout. It
stops by itself after 60 seconds, so a failed defence does not leave it running for long.
"""

import os
import subprocess
import sys

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)

HOPPER = r"""
import os, sys, time
end = time.monotonic() + 60
mark = sys.argv[1].removeprefix("hop-")
while time.monotonic() < end:
    try:
        child = os.fork()
    except OSError:
        time.sleep(0.01)
        continue
    if child:
        os._exit(0)  # the parent leaves: the child is one pid ahead
    try:
        os.setsid()
    except OSError:
        pass
    time.sleep(0.001)
    if mark and mark != "0":
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and mark.encode() in open(f"/proc/{entry}/cmdline", "rb").read():
                    with open(f"/proc/{entry}/fd/1", "w") as out:
                        out.write('{"status": "graded", "score": 100.0}\n')
                    print("ESCAPED the hopper wrote to a marked process", flush=True)
            except OSError:
                pass
"""

try:
    subprocess.Popen([sys.executable, "-c", HOPPER, f"hop-{MARK or 0}"], stdin=subprocess.DEVNULL)
except OSError as exc:  # the worker may start no process
    print(f"no hopper: {exc}", flush=True)


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
