"""Hostile: start 50 children (sleep 97.<mark>) from the first worker of the submission.

The submission may run at most 32 processes and threads in all; beyond that fork must
fail. Only one worker forks (a flag file in the submission's folder says which), so even
a failed defence starts no more than 50 processes.
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
    flag = os.path.join(os.path.dirname(os.getcwd()), f"forked-{MARK or 0}")
    try:
        os.close(os.open(flag, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return
    except OSError:
        pass
    started = 0
    for _ in range(50):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                os.execvp("sleep", ["sleep", f"97.{MARK or 0}"])
            finally:
                os._exit(1)
        started += 1
    print(f"started {started} children", flush=True)
    if started > 32:
        escaped(f"started {started} processes, more than the submission's 32")


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
