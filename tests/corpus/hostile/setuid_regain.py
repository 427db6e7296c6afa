"""Hostile: regain the privileges the sandbox dropped.

setuid(0) and setresuid, setgroups, a full capability set, a set-user-ID binary (su,
sudo, mount), chroot, sethostname and mounting; and no_new_privs must be on.
"""

import ctypes
import os
import subprocess

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    steps = {
        "setuid(0)": lambda: os.setuid(0),
        "setresuid(0, 0, 0)": lambda: os.setresuid(0, 0, 0),
        "setgroups([0])": lambda: os.setgroups([0]),
        "chroot('/')": lambda: os.chroot("/"),
    }
    for name, step in steps.items():
        try:
            step()
            escaped(name)
        except OSError:
            pass
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)(*([0xFFFFFFFF] * 6))
    if libc.capset(header, data) == 0:
        escaped("capset with every capability")
    if libc.sethostname(b"pwned", 5) == 0:
        escaped("sethostname")
    if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0:
        escaped("mount")
    if libc.prctl(39, 0, 0, 0, 0) == 0:  # PR_GET_NO_NEW_PRIVS
        escaped("no_new_privs is off: a set-user-ID binary would raise privileges")
    for argv in (["su", "-c", "id -u"], ["sudo", "-n", "id", "-u"], ["mount", "-t", "tmpfs", "none", "/mnt"]):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0 and (done.stdout.strip() == "0" or argv[0] == "mount"):
            escaped(f"ran {argv[0]} as root")


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
