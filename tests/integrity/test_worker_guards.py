"""The worker's guards, one behaviour each, on small submissions run in one sandbox.

The audit hook (``harness.sandbox.worker.audit``) reports what an engine never needs
at the submission's line; the tripwires prove after every request that the
guard is still in place; the memory and no_grad probes measure the
submission's own objects. Every submission is a small correct engine plus one
extra (a line that is the point of the test).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from harness.checks.context import CandidateError, Context, Shared
from harness.program import Leaf, Program, Step
from harness.sandbox.launch import Limits, Sandbox
from harness.sandbox.worker.audit import EXEMPTIONS

ENGINE = '''
import torch


class Tensor:
    def __init__(self, data, requires_grad=False):
        self.data = data
        self.requires_grad = requires_grad
        self.grad = None
        self._parents = ()
        self._rule = None

    def _child(self, data, parents, rule):
        out = Tensor(data, any(p.requires_grad for p in parents))
        if out.requires_grad:
            out._parents, out._rule = parents, rule
        return out

    def __add__(self, other):
        return self._child(self.data + other.data, (self, other), lambda g: (g, g))

    def __mul__(self, other):
        a, b = self.data, other.data
        return self._child(a * b, (self, other), lambda g: (g * b, g * a))

    def __matmul__(self, other):
        a, b = self.data, other.data
        return self._child(a @ b, (self, other), lambda g: (g @ b.T, a.T @ g))

    def relu(self):
        mask = self.data > 0
        return self._child(self.data * mask, (self,), lambda g: (g * mask,))

    def sum(self):
        shape = self.data.shape
        return self._child(self.data.sum(), (self,), lambda g: (g.expand(shape),))

    def backward(self):
        extra(self)
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            t, expanded = stack.pop()
            if expanded:
                order.append(t)
            elif id(t) not in seen:
                seen.add(id(t))
                stack.append((t, True))
                stack.extend((p, False) for p in t._parents)
        grads = {id(self): torch.ones_like(self.data)}
        for t in reversed(order):
            g = grads.pop(id(t), None)
            if g is None:
                continue
            if t._rule is None:
                if t.requires_grad:
                    t.grad = g if t.grad is None else t.grad + g
                continue
            for p, pg in zip(t._parents, t._rule(g)):
                if p.requires_grad:
                    grads[id(p)] = grads[id(p)] + pg if id(p) in grads else pg
            t._parents, t._rule = (), None
'''
"""A correct engine whose backward first calls ``extra(self)``, defined after it with the line under test."""

GRAPH = Program(
    (Leaf("x", torch.tensor([[1.0, -2.0], [0.5, 2.0]], dtype=torch.float64)),
     Leaf("w", torch.tensor([[1.0, 2.0], [0.0, -1.0]], dtype=torch.float64))),
    (Step("h", "matmul", ("x", "w")), Step("r", "relu", ("h",)), Step("y", "sum", ("r",))),
    "y",
)


def _submission(tmp: Path, name: str, extra: str, header: str = "") -> Path:
    """ENGINE after ``header``, with ``extra`` as the body of the ``extra(t)`` that backward calls."""
    body = textwrap.indent(textwrap.dedent(extra).strip(), "    ")
    path = tmp / f"{name}.py"
    path.write_text(textwrap.dedent(header) + ENGINE + f"\n\ndef extra(t):\n{body}\n")
    return path


def _line_of_extra(path: Path) -> int:
    return path.read_text().splitlines().index("def extra(t):") + 2


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox.launch(Limits(import_seconds=10.0)) as box:
        yield box


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("guards")


def _run(sandbox, path: Path, *probes: str) -> tuple[list[str], list, dict]:
    shared = Shared(deadline=float("inf"))
    ctx = Context(sandbox, path, "Tensor", path.stem, shared)
    facts = {}
    try:
        ctx.worker()
        ctx.run(GRAPH, timeout=10.0)
        for probe in probes:
            facts[probe] = ctx.probe(probe, timeout=10.0)
    except CandidateError as exc:
        facts["error"] = str(exc)
    finally:
        ctx.retire()
    return shared.violations, shared.review, facts


# ---- the audit hook ------------------------------------------------------------------------------


AUDITED = {
    "type_hints": ('''
        import typing
        def names(a: "torch.autograd.grad"): pass
        typing.get_type_hints(names)
        ''', "exec()", "seen at run time: code was compiled or run from text"),
    "gc_referrers": ('''
        import gc
        gc.get_referrers(t)
        ''', "gc.get_referrers()", "seen at run time: the garbage collector was asked for live objects"),
    "laundered_through_torch": ('''
        import gc
        import torch.utils._pytree as pytree
        pytree.tree_map(gc.get_objects, [None])
        ''', "gc.get_objects()", "seen at run time: the garbage collector was asked for live objects"),
    "late_import": ('''
        import pydoc
        ''', "import pydoc", "seen at run time: a module outside the allowlist was loaded (pydoc)"),
    "frames": ('''
        import sys
        sys._getframe(1)
        ''', "sys._getframe()", "seen at run time: the frames of running code were read"),
    "open_file": ('''
        open("/proc/self/status").close()
        ''', "open('/proc/self/status')", "seen at run time: a file was opened"),
    "ctypes_memory": ('''
        import ctypes
        try:
            ctypes.c_long.from_address(id(t))
        except PermissionError:
            pass
        ''', "ctypes.cdata()", "seen at run time: memory was read or written through ctypes (refused)"),
}


@pytest.mark.parametrize("name", sorted(AUDITED))
def test_the_audit_hook_reports_at_the_submission_line(sandbox, folder, name):
    extra, construct, why = AUDITED[name]
    path = _submission(folder, name, extra)
    violations, review, _ = _run(sandbox, path)
    lines = {e.line for e in review if e.construct == construct and e.why.startswith(why)}
    assert lines and lines <= set(range(_line_of_extra(path), _line_of_extra(path) + 5)), review


def test_what_an_engine_legitimately_uses_raises_no_event(sandbox, folder):
    """dataclasses and namedtuple compile code, typing's forward references compile text: theirs, not the file's."""
    header = '''
        import collections
        import dataclasses
        import typing
        from typing import List, Optional

        Pair = collections.namedtuple("Pair", "grad value")


        @dataclasses.dataclass
        class Node:
            parents: List["Node"]
            label: Optional["str"] = None
        '''
    path = _submission(folder, "clean_helpers", '''
        Node([], "x"); Pair(1, 2); repr(Node([]))
        ''', header)
    assert _run(sandbox, path)[:2] == ([], [])


LAUNDERED = {
    "dataclasses.py": ('''
        import dataclasses
        @dataclasses.dataclass
        class Record:
            code: object = dataclasses.field(default_factory=lambda: compile("1", "<x>", "eval"))
        dataclasses.replace(Record())
        ''', "compile('1')", "seen at run time: code was compiled or run from text"),
    "inspect.py": ('''
        import dataclasses
        @dataclasses.dataclass
        class Record:
            code: object = dataclasses.field(default_factory=lambda: (lambda: 0).__code__)
        Record()
        ''', "function.__code__", "seen at run time: a function's code object was read"),
    "collections/__init__.py": ('''
        import collections, sys
        class Name:
            def __str__(self):
                sys._getframe(0)
                return "grad"
        collections.namedtuple("Pair", [Name(), "value"])
        ''', "sys._getframe()", "seen at run time: the frames of running code were read"),
    "typing.py": ('''
        import typing
        class Hinted:
            @property
            def __annotations__(self):
                compile("2", "<x>", "eval")
                return {}
        typing.get_type_hints(Hinted())
        ''', "compile('2')", "seen at run time: code was compiled or run from text"),
    "enum.py": ('''
        import enum, sys
        class Names:
            def __iter__(self):
                sys._getframe(0)
                return iter(["A", "B"])
        enum.Enum("Kind", Names())
        ''', "sys._getframe()", "seen at run time: the frames of running code were read"),
    "logging/__init__.py": ('''
        import logging
        logging.currentframe()
        ''', "sys._getframe()", "seen at run time: the frames of running code were read"),
    "tokenize.py": ('''
        import warnings
        warnings.warn_explicit("layout", UserWarning, "/dev/null", 1)
        ''', "open('/dev/null')", "seen at run time: a file was opened"),
}
"""For each standard-library helper with an exemption: the submission's own code run beneath it, raising an
event of the exempted kind, which the hook must still report at the submission's line."""


def test_every_exemption_is_tried_as_a_laundering_route():
    assert {e.site.split(":")[0] for e in EXEMPTIONS} == set(LAUNDERED)


@pytest.mark.parametrize("helper", sorted(LAUNDERED))
def test_code_run_beneath_an_exempted_helper_is_still_seen(sandbox, folder, helper):
    extra, construct, why = LAUNDERED[helper]
    path = _submission(folder, "laundered_" + helper.replace("/", "_").removesuffix(".py"), extra)
    violations, review, _ = _run(sandbox, path)
    lines = {e.line for e in review if e.construct == construct and e.why.startswith(why)}
    assert lines and lines <= set(range(_line_of_extra(path), _line_of_extra(path) + 8)), review


def test_an_engine_that_warns_and_logs_raises_no_event(sandbox, folder):
    """warnings shows the caller's line (Python's line cache opens a source), a log record names its caller."""
    path = _submission(folder, "warns_and_logs", '''
        import logging, warnings
        warnings.warn("backward", UserWarning, stacklevel=2)
        logging.getLogger("engine").warning("backward over %d nodes", 3)
        ''')
    assert _run(sandbox, path)[:2] == ([], [])


# ---- liveness -------------------------------------------------------------------------------------


LIVENESS = {
    "hook_popped": ('''
        torch._C._autograd._pop_saved_tensors_default_hooks()
        ''', "the submission disabled the grader's guard: its saved-tensor hook was removed or covered"),
    "hooks_disabled": ('''
        torch._C._autograd._saved_tensors_hooks_disable("off")
        ''', "the submission disabled the grader's guard: saved-tensor hooks were switched off"),
    "mode_popped": ('''
        torch._C._pop_torch_function_stack()
        ''', "the submission disabled the grader's guard: its torch-function mode was removed"),
    "modes_off": ('''
        torch._C.DisableTorchFunction().__enter__()
        ''', "the submission disabled the grader's guard: torch-function modes were left switched off"),
    "dual_level": ('''
        import torch.autograd.forward_ad as fwd
        with fwd.dual_level():
            pass
        ''', "forward-mode AD (a dual level was entered)"),
}


@pytest.mark.parametrize("name", sorted(LIVENESS))
def test_a_guard_switched_off_is_a_violation(sandbox, folder, name):
    extra, expected = LIVENESS[name]
    violations, _, _ = _run(sandbox, _submission(folder, name, extra))
    assert any(v.startswith(expected) for v in violations), violations


def test_the_guard_never_calls_a_frame_reader_the_submission_put_in_place(sandbox, folder):
    """The guard reads its caller's file at every torch call with the audit hook quiet: a replaced
    sys._getframe must not be what it calls (its code would run unjudged)."""
    header = '''
        import sys

        _calls = []
        _real = sys._getframe


        def _spy(depth=0):
            _calls.append(depth)
            return _real(depth + 1)


        sys._getframe = _spy
        '''
    path = _submission(folder, "replaced_getframe", '''
        before = len(_calls)
        t.data + 0
        if len(_calls) != before:
            raise RuntimeError("the grader called the submission's sys._getframe")
        ''', header)
    shared = Shared(deadline=float("inf"))
    ctx = Context(sandbox, path, "Tensor", path.stem, shared)
    try:
        observed = ctx.run(GRAPH, timeout=10.0)
    finally:
        ctx.retire()
    assert observed.error is None, observed.error
    assert torch.allclose(observed.grads["x"], GRAPH.run_torch().grads["x"])


# ---- the deep chain, run without the guard --------------------------------------------------------


ONLY_WHEN_DEEP = {
    "autograd_backward": ('''
        depth, node = 0, t
        while node._parents and depth < 500:
            node, depth = node._parents[0], depth + 1
        if depth >= 500:
            a = torch.ones(1, requires_grad=True)
            (a * 2).sum().backward()
        ''', "torch's autograd engine ran a backward pass"),
    "recorded_graph": ('''
        depth, node = 0, t
        while node._parents and depth < 500:
            node, depth = node._parents[0], depth + 1
        if depth >= 500:
            torch.ones(1, requires_grad=True) * 2
        ''', "torch's autograd recorded a graph out of the guard's sight"),
}


@pytest.mark.parametrize("name", sorted(ONLY_WHEN_DEEP))
def test_torch_autograd_used_only_on_the_deep_chain_is_still_a_violation(sandbox, folder, name):
    """The deep chain's backward runs without the torch-function guard (its cost); torch's own counts,
    compared at the end of every request, still see its autograd at work."""
    extra, expected = ONLY_WHEN_DEEP[name]
    path = _submission(folder, f"deep_{name}", extra)
    shared = Shared(deadline=float("inf"))
    ctx = Context(sandbox, path, "Tensor", path.stem, shared)
    try:
        ctx.run(GRAPH, timeout=10.0)
        assert shared.violations == []  # a small graph: the engine's own rules only
        facts = ctx.probe("deep_chain", n=2000, timeout=20.0)
    finally:
        ctx.retire()
    assert facts.get("grad", {}).get("values") == [2001.0]
    assert any(v.startswith(expected) for v in shared.violations), shared.violations


# ---- the submission's own graph objects -------------------------------------------------------------


DATA_COPY = Path(__file__).parent / "data" / "data_copy_property.py"


def test_memory_and_no_grad_are_measured_on_the_candidates_objects(sandbox):
    """A .data property that returns a fresh copy no longer hides a kept graph or a recording no_grad."""
    _, _, facts = _run(sandbox, DATA_COPY, "memory_release", "no_grad")
    assert facts["memory_release"]["alive_after"] == 2
    assert facts["no_grad"]["intermediate_freed"] is False


def test_an_engine_that_releases_its_graph_passes_the_memory_probes(sandbox, folder):
    header = '''
        import contextlib
        _recording = [True]


        @contextlib.contextmanager
        def no_grad():
            _recording[0] = False
            try:
                yield
            finally:
                _recording[0] = True
        '''
    source = _submission(folder, "releasing", "pass", header)
    text = source.read_text().replace("out = Tensor(data, any(p.requires_grad for p in parents))",
                                      "out = Tensor(data, _recording[0] and any(p.requires_grad for p in parents))")
    source.write_text(text)
    violations, review, facts = _run(sandbox, source, "memory_release", "no_grad")
    assert (violations, review) == ([], [])
    assert facts["memory_release"]["alive_after"] == 0 and facts["memory_release"]["alive_before"] > 0
    assert facts["no_grad"]["intermediate_freed"] is True
