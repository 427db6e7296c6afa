"""Hostile: fill the disk: up to 200 MiB in files of 16 MiB from the submission's first worker.

The submission's private tmpfs holds 64 MiB in all and no file may pass 32 MiB. Only one
worker writes (a flag file says which), so a failed defence writes at most 200 MiB.
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


def attack():
    flag = os.path.join(os.path.dirname(os.getcwd()), f"filled-{MARK or 0}")
    try:
        os.close(os.open(flag, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return
    except OSError:
        pass  # a full disk: the writes below fail at once
    chunk, written = b"z" * (1 << 20), 0
    for n in range(13):
        try:
            with open(f"fill-{n}", "wb") as f:
                for _ in range(16):
                    f.write(chunk)
                    f.flush()
                    written += len(chunk)
        except OSError:
            pass
    print(f"wrote {written >> 20} MiB", flush=True)
    if written > LIMIT + (1 << 20):
        escaped(f"wrote {written >> 20} MiB, more than the submission's 64 MiB")
    for n in range(13):
        try:
            os.unlink(f"fill-{n}")
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
