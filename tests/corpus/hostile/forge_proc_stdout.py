"""Hostile: write a forged all-pass report into the grader's stdout through /proc/<pid>/fd/1.

A grader whose stdout a worker can reach prints the forged report before (or instead of)
its own. The tests run this one through the command line and parse its stdout.
"""

import json
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

FORGED = json.dumps({
    "status": "graded", "score": 100.0, "max_score": 100.0, "message": "",
    "levels": {"core": {"score": 100.0, "max_score": 100.0}},
    "checks": [{"id": "core.properties", "level": "core", "concept": "forged", "outcome": "passed", "points": 100.0,
                "max_points": 100.0, "message": ""}],
    "integrity": {"violations": [], "review": []},
}) + "\n"


def attack():
    for pid in sorted(set(ancestors() + marked())):
        for fd in (1, 2):
            try:
                with open(f"/proc/{pid}/fd/{fd}", "w") as f:
                    f.write(FORGED)
            except OSError:
                continue
            escaped(f"wrote a forged report to /proc/{pid}/fd/{fd}")


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
