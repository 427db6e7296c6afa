"""Hostile: hold memory outside every per-process limit in System V shared memory segments.

A segment outlives the mapping that filled it, so RLIMIT_AS does not count it. Eight
segments of 16 MiB, each filled and detached (128 MiB at most, from the first worker only),
then message queues.
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

IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0
LIMIT = 64 << 20


def attack():
    flag = os.path.join(os.path.dirname(os.getcwd()), f"shm-{MARK or 0}")
    try:
        os.close(os.open(flag, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return  # segments outlive their worker: only the first worker holds any
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    held = 0
    for _ in range(8):
        segment = libc.shmget(IPC_PRIVATE, ctypes.c_size_t(16 << 20), IPC_CREAT | 0o600)
        if segment < 0:
            break
        address = libc.shmat(segment, None, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            break
        ctypes.memset(address, 1, 16 << 20)
        libc.shmdt(ctypes.c_void_p(address))
        held += 16 << 20
    queues = sum(libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600) >= 0 for _ in range(16))
    print(f"held {held >> 20} MiB of System V shared memory, {queues} message queues", flush=True)
    if held > LIMIT:
        escaped(f"held {held >> 20} MiB in System V shared memory")


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
