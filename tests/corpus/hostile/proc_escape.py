"""Hostile: the classic container escapes through /proc, /sys and /dev.

The host's root through /proc/1/root, the grader's working folder through
/proc/<pid>/cwd, the kernel's core_pattern and sysrq trigger, cgroup release agents, raw
disks and kernel memory, the shadow password file. Files are only opened, never written.
"""

import glob
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


def opened(path, flags):
    try:
        os.close(os.open(path, flags))
        return True
    except OSError:
        return False


def attack():
    for pid in sorted(set([1] + ancestors() + marked())):
        if pid == os.getpid():
            continue
        for link in ("root", "cwd"):
            try:
                os.listdir(f"/proc/{pid}/{link}/")
                escaped(f"listed /proc/{pid}/{link}")
            except OSError:
                pass
    for path in ["/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/sys/kernel/uevent_helper",
                 "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches"] + glob.glob("/sys/fs/cgroup/*/release_agent"):
        if opened(path, os.O_WRONLY):
            escaped(f"opened {path} for writing")
    for path in ["/etc/shadow", "/dev/mem", "/dev/kmem", "/dev/kmsg", "/dev/port"] + glob.glob("/dev/[vsh]d[a-z]") \
            + glob.glob("/dev/nvme*") + glob.glob("/dev/loop*"):
        if opened(path, os.O_RDONLY):
            escaped(f"opened {path} for reading")


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
