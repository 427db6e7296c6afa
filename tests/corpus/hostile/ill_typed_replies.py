"""Hostile: a different ill-typed reply from every worker, written straight onto the socket.

Wrong types, tensors whose shapes and values disagree, NaN where an integer belongs,
negative or huge dimensions, a hello where a reply belongs, long texts, deep nesting and
thousands of objects. Each must be that check's error, never the grader's.

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

T = {"shape": [2], "dtype": "float64", "values": [1.0, 2.0]}
VARIANTS = [
    '{"grads": {"a": {"shape": [2], "dtype": "int64", "values": [NaN, 1e300]}}}',
    '{"values": {"y": {"shape": [2], "dtype": "int64", "values": [0.5, Infinity]}}, "leaf_data": {"a": '
    '{"shape": [1], "dtype": "int64", "values": [-Infinity]}}}',
    '{"grads": {"a": {"shape": [1000000, 1000000], "dtype": "float64", "values": []}}}',
    '{"grads": {"a": {"shape": [2, 2], "dtype": "float64", "values": [true, false, null, "1"]}}}',
    '{"values": {"y": {"shape": [2, 3], "dtype": "float64", "values": [1.0]}}}',
    '{"grads": {"a": {"shape": [-1], "dtype": "float64", "values": [1.0]}}}',
    '{"seconds": "fast", "backward_seconds": -1}',
    '{"error": {"where": 5, "type": [], "message": {}, "frames": "x"}}',
    '{"requires_grad": {"y": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {"i": 1}}}}}}}}}}}',
    '{"values": {"y": {"not_tensor": "' + "x" * 100_000 + '"}}}',
    '{"violations": [' + ",".join(["{}"] * 19_000) + ']}',
    json.dumps({"kind": "ready", "has_class": True, "violations": [], "score": 100.0, "status": "graded"}),
    json.dumps({"values": {"k" * 300: None}}),
    json.dumps({"grads": {"a": {**T, "dtype": "complex128"}}, "values": {"y": {**T, "dtype": "bool"}}}),
    '[1, 2, 3]',
    '"passed"',
    'null',
]


def my_variant():
    """This worker's variant: the first one no earlier worker of the submission has taken."""
    folder = os.path.dirname(os.getcwd())
    for i in range(len(VARIANTS)):
        try:
            os.close(os.open(os.path.join(folder, f"variant-{i}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return i
        except OSError:
            continue
    return 0


VARIANT = my_variant()


def during_backward():
    send_frame(VARIANTS[VARIANT].encode())
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
