"""Hostile: start 50 threads in every worker; threads count against the process limit too.

Each thread sleeps until the worker is killed. A worker may start no more than the
submission's 32 processes and threads, whatever the defence does it never starts more than 50.
"""

import threading
import time

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)


def attack():
    started = 0
    for _ in range(50):
        try:
            threading.Thread(target=time.sleep, args=(97,), daemon=True).start()
        except RuntimeError:
            break
        started += 1
    print(f"started {started} threads", flush=True)
    if started > 32:
        escaped(f"started {started} threads, more than the submission's 32")


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
