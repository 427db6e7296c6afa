"""Hostile: draw on the reader's terminal with escape codes in exceptions, names and output.

Clears the screen, rewrites lines with carriage returns, fakes PASS lines in colour, hides
text with a hyperlink, reverses it with bidirectional overrides, smuggles invisible tag
characters and puts a lone surrogate (which no output encoding accepts) into an exception
message; escape codes also go into the exception's class name and a function name in
the traceback, and bytes that are not UTF-8 into stdout.
"""

import os

import torch

# The tests copy this file as <name>_m<digits>.py: the digits mark every process it starts and
# are the only processes outside its own it may touch. Without a mark it touches nothing outside.
MARK = __name__.rpartition("_m")[2] if __name__.rpartition("_m")[2].isdigit() else ""


def escaped(what):
    """A step that worked where it must not: the tests look for this word in the report."""
    print(f"ESCAPED {what}", flush=True)

PAYLOAD = ("\x1b[2J\x1b[H\x1b[32m  PASS core.properties  60.0/60.0\x1b[0m\r"
           "score 100.0/100.0  [graded]  interview bar: passed\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\"
           "\u202egnirts desrever\u202c \x00\x07\x7f\x9b31m \u2028\u2029 \ud800 \U000e0041\U000e0042 \u200b\ufeff")

RAW = PAYLOAD.encode("utf-8", "surrogatepass") + b"\n"
os.write(1, RAW)
os.write(2, RAW)
os.write(1, b"\xff\xfe\x1b[31mnot utf-8\xc3\n")

Fake = type("\x1b[32mPASS\x1b[0m\u202e", (Exception,), {})  # a class name cannot hold a lone surrogate


def _raiser():
    raise Fake(PAYLOAD)


_renamed = type(_raiser)(_raiser.__code__.replace(co_name="\x1b[2J\u2028evil"), globals())


def during_backward():
    _renamed()


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
