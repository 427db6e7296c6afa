"""Hostile: daemons that leave the worker's process tree (double fork, new session) and ignore signals.

One ``sleep`` detached the classic way, and one that also clears its parent-death signal
and ignores SIGTERM and SIGHUP. Killing the worker's process group or session misses them;
the worker's pid namespace does not. Their durations carry the mark (97.<mark> seconds).
"""

import os
import signal
import sys

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)


def daemonize(argv, ignore_signals):
    try:
        first = os.fork()
    except OSError as exc:  # the worker may start no process
        print(f"no daemon: {exc}", flush=True)
        return
    if first:
        os.waitpid(first, 0)
        return
    try:
        os.setsid()
        if os.fork():
            os._exit(0)
        if ignore_signals:
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
            import ctypes

            ctypes.CDLL(None).prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG: none
        os.execvp(argv[0], argv)
    finally:
        os._exit(1)


daemonize(["sleep", f"97.{MARK or 0}"], ignore_signals=False)
daemonize(["sleep", f"97.{MARK or 0}1"], ignore_signals=True)
daemonize([sys.executable, "-c", "import time; time.sleep(97)", f"daemon-{MARK or 0}"], ignore_signals=True)


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
