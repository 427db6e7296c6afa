"""Hostile: attach a debugger to the grader with PTRACE_SEIZE through ctypes.

A tracer can rewrite the grader's registers and memory. PTRACE_SEIZE does not stop the
tracee, so even a successful attach leaves the test's processes running; the tracee is
released when the worker dies. Also tries every low pid blindly, where /proc shows nothing.
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


def marked():
    """Processes whose command line carries MARK (the test's grader and its parent), if /proc shows them."""
    found = []
    if not MARK:
        return found
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if MARK.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def _parent_and_cmdline(pid):
    with open(f"/proc/{pid}/stat") as f:
        parent = int(f.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return parent, f.read()


def ancestors(only_ours=False):
    """The worker's parent, its parent and so on, as far as /proc shows them.

    ``only_ours`` stops at the first one that is neither part of a sandbox nor marked: the
    processes a destructive attack may hit without harming anything but the test's own.
    """
    chain, pid = [], os.getppid()
    while pid > 1 and len(chain) < 12:
        try:
            parent, cmdline = _parent_and_cmdline(pid)
        except OSError:
            if not only_ours:
                chain.append(pid)
            break
        if only_ours and not ((MARK and MARK.encode() in cmdline) or b"harness.sandbox" in cmdline):
            break
        chain.append(pid)
        pid = parent
    return chain

PTRACE_SEIZE = 0x4206
_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.restype = ctypes.c_long
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


def attack():
    candidates = set(ancestors() + marked()) | set(range(1, 400))
    candidates.discard(os.getpid())
    for pid in sorted(candidates):
        if _libc.ptrace(PTRACE_SEIZE, pid, None, None) == 0:
            escaped(f"PTRACE_SEIZE of pid {pid} worked")


attack()


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
