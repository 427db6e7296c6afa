"""Hostile: write outside the submission's private tmpfs: /, /etc, /dev/shm, the grader's folder, ...

Any writable place outside /tmp is disk with no limit (memory, for a tmpfs), and a place
every later submission sees. Each file created is removed again at once.
"""

import os

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)

PLACES = ["/", "/etc", "/grader", "/root", "/dev", "/dev/shm", "/dev/mqueue", "/var/tmp", "/var", "/usr", "/home",
          "/run", "/run/lock", "/mnt", "/opt", "/srv", "/bin", "/lib", "/sys", "/proc"]


def attack():
    for place in PLACES:
        path = os.path.join(place, f".hostile-{MARK or 0}-{os.getpid()}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError:
            continue
        os.close(fd)
        os.unlink(path)
        escaped(f"created a file in {place}")


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
