"""Hostile: create a user namespace of its own and mount an unlimited tmpfs in it.

Root in a nested user namespace may mount a tmpfs that no disk limit covers (it is
memory), and gains capabilities the sandbox took away. Nothing is written to it.
"""

import ctypes
import os

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)

CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000


def nested(libc):
    found = []
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0:
        found.append("created a nested user namespace")
        os.makedirs("nested", exist_ok=True)
        if libc.mount(b"none", b"nested", b"tmpfs", 0, b"size=8g") == 0:
            found.append("mounted a tmpfs of its own")
    return found


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    report_r, report_w = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # the worker may start no process: try it in the worker itself
        pid = None
    if pid is None:
        found = "\n".join(nested(libc))
    elif pid == 0:
        try:
            os.close(report_r)
            os.write(report_w, "\n".join(nested(libc)).encode())
        finally:
            os._exit(0)
    else:
        os.close(report_w)
        found = os.read(report_r, 4096).decode()
        os.waitpid(pid, 0)
    for line in filter(None, found.splitlines()):
        escaped(line)


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
