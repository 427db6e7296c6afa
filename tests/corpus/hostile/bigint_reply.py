"""Hostile: replies holding 4,000-digit integers, as timings and as tensor values.

They parse (under Python's 4,300-digit limit) but fit no schema: a grader doing
arithmetic with them would spend seconds or overflow floats.

"""

import json
import os
import stat
import struct
import time

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)


def worker_socket():
    """The worker's channel to the grader, found by its descriptor's type."""
    for fd in range(3, 256):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                return fd
        except OSError:
            continue
    raise RuntimeError("no socket among the open descriptors")


def send_raw(data):
    fd = worker_socket()
    while data:
        data = data[os.write(fd, data):]


def send_frame(body, size=None):
    """One frame of the worker protocol: a 4-byte big-endian length (``size`` may lie), then the body."""
    send_raw(struct.pack(">I", len(body) if size is None else size) + body)


def hang():
    time.sleep(97)  # the grader kills the worker long before

HUGE = "9" * 4000


def during_backward():
    send_frame(('{"seconds": ' + HUGE + ', "backward_seconds": ' + HUGE + ', "values": {"y": {"shape": [1], '
                '"dtype": "float64", "values": [' + HUGE + ']}}, "grads": {"a": {"shape": [' + HUGE + '], '
                '"dtype": "float64", "values": []}}}').encode())
    hang()


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
