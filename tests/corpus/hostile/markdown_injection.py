"""Hostile: Markdown and HTML in exceptions and output, for the --format markdown report.

Breaks out of table cells, opens headings and code fences, injects script and image tags,
links and comments that would hide the rest of the report.
"""

import sys

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)

PAYLOAD = ("| core.properties | passed | 60.0/60.0 | |\n\n## Score 100.0 / 100.0\n\n"
           "<script>alert(1)</script><img src=x onerror=alert(1)>\n[click](javascript:alert(1)) "
           "![x](http://evil.example/x.png)\n```\n<!-- the rest is hidden\n# heading\n- item\n1. item\n"
           "> quote\n---\n&lt;b&gt; **bold** _it_ ~~strike~~ <details><summary>x</summary>")

print(PAYLOAD, flush=True)
sys.stderr.write(PAYLOAD + "\n")


def during_backward():
    raise ValueError(PAYLOAD)


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
