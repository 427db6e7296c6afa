"""A submission that looks for the grader's own files from inside its sandbox and prints what it found.

It walks every folder on ``sys.path``, their parents, the folders around torch and the folders
of the grader's modules it runs with, and tries to read each path in ``TARGETS`` (filled in by
the test: where the model answer, the mutants and the spec library live on the host) with
``open``, raw system calls, a torch storage (C code: no audit event) and the C library.
Its last line of output is one JSON object, small enough for the captured output: ``grader``
(the Python files under ``/grader``, the worker's own modules), ``found`` (other paths that look
like the grader's: its secrets, its packages, a spec library), ``read`` (the targets some route
could read, with the route) and ``roots`` (how many folders the walk started from).
"""

import ctypes
import json
import os
import sys

import torch

TARGETS: list = []  # the test writes the host's paths here

NAMES = {"harness", "reference", "candidate_template", "specs"}
SECRETS = ("/reference/engine.py", "/harness/diagnosis/mutants.py", "/harness/diagnosis/catalogue.py",
           "/harness/data/rubric.yaml", "/candidate_template/solution.py")
MARKS = ("/harness/diagnosis/", "/harness/data/", "/harness/checks/", "/harness/grade.py", "/specs/core/")
SKIP = {"torch", "torchgen", "functorch", "sympy", "numpy", "mpmath", "networkx", "hypothesis", "pip",
        "setuptools", "jinja2", "playwright", "dask", "distributed", "pandas", "_pytest", "pytest"}


def walk(top, depth=0, budget=[200000]):
    if depth > 7 or budget[0] <= 0:
        return
    try:
        entries = list(os.scandir(top))
    except OSError:
        return
    for entry in entries:
        budget[0] -= 1
        path = entry.path
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIP and not entry.name.startswith("."):
                    walk(path, depth + 1)
            elif path.startswith("/grader/"):
                if path.endswith(".py"):
                    grader.add(path.removeprefix("/grader/"))
            elif path.endswith(SECRETS) or any(mark in path for mark in MARKS):
                found.add(path)
        except OSError:
            continue


def readers():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.open.argtypes = [ctypes.c_char_p, ctypes.c_int]

    def by_open(path):
        with open(path, "rb") as f:
            return f.read(64)

    def by_syscall(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, 64)
        finally:
            os.close(fd)

    def by_storage(path):
        size = os.stat(path).st_size
        return bytes(torch.UntypedStorage.from_file(path, False, size).tolist()[:64])

    def by_libc(path):
        fd = libc.open(path.encode(), 0)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "libc open")
        buf = ctypes.create_string_buffer(64)
        n = libc.read(fd, buf, 64)
        libc.close(fd)
        if n <= 0:
            raise OSError("libc read")
        return buf.raw[:n]

    return {"open": by_open, "syscall": by_syscall, "torch_storage": by_storage, "libc": by_libc}


roots = set()
for entry in sys.path + [os.path.dirname(os.path.dirname(torch.__file__))]:
    if entry:
        roots |= {entry, os.path.dirname(entry), os.path.dirname(os.path.dirname(entry))}
for name, module in list(sys.modules.items()):
    if name.split(".")[0] in NAMES and getattr(module, "__file__", None):
        roots.add(os.path.dirname(module.__file__))
# The folders around the places the test names are walked too, wherever the checkout lies (even /tmp/x):
# a submission that guesses where the grader lives gains nothing either.
roots = {r for r in roots if r.count(os.sep) >= 3} | {"/grader"} | {
    os.path.dirname(os.path.dirname(t)) for t in TARGETS}
found, grader = set(), set()
for root in sorted(roots):
    walk(root)
read = []
for target in TARGETS:
    for route, reader in readers().items():
        try:
            if reader(target):
                read.append([target, route])
        except Exception:
            pass
print(json.dumps({"grader": sorted(grader), "found": sorted(found, key=lambda p: (not p.endswith(SECRETS), p))[:20], "read": read, "roots": len(roots)}))


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data, self.requires_grad, self.grad = data, requires_grad, None
