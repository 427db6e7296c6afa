"""Hostile: open outbound network connections (exfiltration, fetching answers).

TCP and UDP to public addresses over IPv4 and IPv6, a DNS lookup, and the host's loopback
services. The sandbox has no network at all; each attempt has a one-second timeout.
"""

import socket

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)


def attack():
    for family, address in ((socket.AF_INET, ("1.1.1.1", 53)), (socket.AF_INET, ("8.8.8.8", 443)),
                            (socket.AF_INET, ("93.184.215.14", 80)), (socket.AF_INET6, ("2606:4700:4700::1111", 53)),
                            (socket.AF_INET, ("127.0.0.1", 22)), (socket.AF_INET, ("10.0.2.2", 80)),
                            (socket.AF_INET, ("169.254.169.254", 80))):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.connect(address)
            escaped(f"connected to {address}")
        except OSError:
            pass
        finally:
            s.close()
    try:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00", ("1.1.1.1", 53))
        escaped("sent a UDP datagram to 1.1.1.1")
    except OSError:
        pass
    try:
        socket.setdefaulttimeout(1)
        socket.getaddrinfo("example.com", 80)
        escaped("resolved example.com")
    except OSError:
        pass
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        escaped("opened a raw packet socket")
    except (OSError, AttributeError):
        pass


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
