"""Hostile: squat the sockets a grader might use, and connect to the host's.

Binds abstract and filesystem Unix sockets and TCP ports with names a grader could pick,
held by a child that lives up to 97 seconds (its argv carries the mark), and tries to
connect to the host's well-known sockets (Docker, D-Bus, X11, syslog).
"""

import os
import socket
import subprocess
import sys

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)

SQUATTER = r"""
import socket, time
held = []
for name in ("\0grader", "\0harness", "\0autograd-grader", "/tmp/grader.sock", "grader.sock"):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(name)
        s.listen(8)
        held.append(s)
    except OSError:
        pass
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::1")):
    for port in (5000, 8000, 8080):
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
            s.bind((host, port))
            s.listen(8)
            held.append(s)
        except OSError:
            pass
print(f"squatting {len(held)} sockets", flush=True)
time.sleep(97)
"""


def attack():
    try:
        subprocess.Popen([sys.executable, "-c", SQUATTER, f"squat-{MARK or 0}"], stdin=subprocess.DEVNULL)
    except OSError as exc:  # the worker may start no process
        print(f"no squatter: {exc}", flush=True)
    for path in ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
                 "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket", "/dev/log",
                 "/run/systemd/private", "/run/systemd/journal/stdout", "\0/tmp/.X11-unix/X0",
                 "/tmp/.X11-unix/X0"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.connect(path)
            escaped(f"connected to {path!r}")
        except OSError:
            pass
        finally:
            s.close()


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
