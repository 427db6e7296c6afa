"""A PEP 578 audit hook in the worker: what the submission does to the interpreter, with its line.

Installed before the submission is imported; Python offers no way to remove
an audit hook, so code that runs later cannot switch it off. It reports what
an engine never needs, each as a review entry that names the submission's
line: modules loaded outside the allowlist, code compiled or run from text
(``exec``, ``eval``, ``typing.get_type_hints`` on string annotations), object
graph walks (``gc.get_objects``/``get_referrers``), frame access, tracing
and profiling hooks, files opened, functions and code objects built by hand,
and ``ctypes``. ``ctypes``' reads and writes of raw memory (``from_address``,
``string_at``, ``PyObj_FromPtr``: how the grader's objects are retyped or read
in place) are also refused: the call raises ``PermissionError``. Loading
libraries and calling C functions through ``ctypes`` is left to the sandbox
(its tests drive the kernel's defences that way) and only reported here.
Process creation is refused by the sandbox's seccomp filter and reported by
``harness.sandbox.worker.processes``' own audit hook.

An event is the submission's when the first frame outward from it that is
not the standard library's is in the submission's file (or is code run from
text in the submission's namespace, such as a dataclass's generated
``__init__``): the submission called it directly, or through a
standard-library helper (a resolver, a formatter). Events inside an import (a
module's own body running), inside torch's or numpy's code, and inside the
grader's are not. No helper is exempt as a whole: ``EXEMPTIONS`` names each
event a standard-library helper raises on an engine's behalf, at the exact
function that raises it (and the caller or argument that makes it harmless),
so the submission's own code running beneath that helper (a field's default
factory, a ``__str__`` a formatter calls) is still seen. The report says what
was seen, in words that accuse nobody (``SEEN``).

Limits (CPython 3.11): ``import`` fires only when a module is actually
loaded, never for one already in ``sys.modules`` (torch, ``os``); most
attribute walks (``string.Formatter().get_field``, ``frame.f_back``) raise no
event at all. The static scan and the runtime tripwires cover those; this hook
adds what no reading of the source can see.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Final

from harness.integrity.allowlist import classify_module

__all__ = ["install", "RAW_MEMORY_EVENTS", "EXEMPTIONS", "Exemption", "SEEN"]

Record = Callable[[str, str, "int | None"], None]
"""``record(construct, why, line)``: one review entry seen at run time."""

RAW_MEMORY_EVENTS: Final = frozenset({"ctypes.cdata", "ctypes.cdata/buffer", "ctypes.PyObj_FromPtr", "ctypes.string_at",
                                      "ctypes.wstring_at"})
_CODE_EVENTS: Final = frozenset({"compile", "exec", "function.__new__", "code.__new__", "marshal.loads",
                                 "marshal.load", "pickle.find_class"})
_WATCHED: Final = _CODE_EVENTS | frozenset({
    "import", "open", "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._getframe",
    "sys._current_frames", "object.__getattr__", "sys.settrace", "sys.setprofile", "sys.addaudithook",
    "socket.__new__", "socket.connect", "socket.bind", "os.kill", "os.remove", "os.rename", "os.chmod",
    "os.listdir", "os.scandir", "shutil.rmtree", "sys.monitoring.register_callback",
})
_NO_LIBRARY_NEEDS: Final = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace",
                                       "sys.setprofile", "function.__new__", "code.__new__", "sys._current_frames"})
"""Events no library does on an engine's behalf: the submission's whenever its frame is anywhere on the stack."""
_WATCHED_ATTRIBUTES: Final = frozenset({"__code__", "tb_frame", "gi_frame"})
"""Audited attribute reads worth a look: swapping a function's code, reaching frames through tracebacks and
generators (CPython 3.11 also audits ``f_code``, ``gi_code`` and defaults, which every traceback reads)."""
_WHY_OF_EVENT: Final = {
    "compile": "code", "exec": "code", "function.__new__": "code", "code.__new__": "code", "marshal.loads": "decode",
    "marshal.load": "decode", "pickle.find_class": "decode", "open": "open", "gc.get_objects": "objects",
    "gc.get_referrers": "objects", "gc.get_referents": "objects", "sys._getframe": "frames",
    "sys._current_frames": "frames", "object.__getattr__": "dunder", "sys.settrace": "trace",
    "sys.setprofile": "trace", "sys.addaudithook": "trace", "sys.monitoring.register_callback": "trace",
}
SEEN: Final = {
    "code": "code was compiled or run from text",
    "decode": "bytes were decoded into code or objects",
    "open": "a file was opened",
    "objects": "the garbage collector was asked for live objects or their references",
    "frames": "the frames of running code were read",
    "dunder": "a function's code object was read or replaced",
    "trace": "a tracing, profiling or audit hook was set",
    "memory": "memory was read or written through ctypes",
    "process": "the file system, a socket or a signal was used",
    "import": "a module outside the allowlist was loaded",
}
"""What the hook saw, as a review entry says it: a fact for a person to weigh, not an accusation (an engine
needs none of these, which is why they are listed)."""


@dataclass(frozen=True)
class Exemption:
    """One event a standard-library helper raises on an engine's behalf, where it raises it.

    ``site`` is the helper's function that raises the event (``path:qualname``, the path relative
    to the standard library); ``caller``, when set, the function that must have called it; ``via``,
    a function that must be between it and the submission; ``sources`` that the event's path
    argument is a Python source file (what tracebacks and warnings read, never data).
    """

    event: str
    site: str
    why: str
    caller: str = ""
    via: str = ""
    sources: bool = False


EXEMPTIONS: Final = (
    Exemption("compile", "dataclasses.py:_create_fn", "a dataclass's generated methods"),
    Exemption("exec", "dataclasses.py:_create_fn", "a dataclass's generated methods"),
    Exemption("object.__getattr__", "inspect.py:_signature_from_function", "a dataclass reads its own signature",
              via="dataclasses.py:_process_class"),
    Exemption("compile", "collections/__init__.py:namedtuple", "a named tuple's generated methods"),
    Exemption("exec", "collections/__init__.py:namedtuple", "a named tuple's generated methods"),
    Exemption("sys._getframe", "collections/__init__.py:namedtuple", "a named tuple finds its module"),
    Exemption("compile", "typing.py:ForwardRef.__init__", "a forward reference is compiled, not run"),
    Exemption("sys._getframe", "enum.py:EnumType._create_", "an enum made by a call finds its module"),
    Exemption("sys._getframe", "logging/__init__.py:<lambda>", "a log record names its caller",
              caller="logging/__init__.py:Logger.findCaller"),
    Exemption("open", "tokenize.py:open", "a warning or a traceback shows a line of Python source",
              caller="linecache.py:updatecache", sources=True),
)
"""Every event the hook lets pass for the standard library, each at its exact call site (a test tries each
helper as a way to launder the submission's own event)."""
_FREQUENT: Final = frozenset({"builtins.id"})
"""Events that matter to no handler and come by the hundred thousand (an engine's visited set calls
``id()`` per node, and ``core.linear_time`` and ``followups.deep_graph`` time it): returned from first."""
_MAX_EVENTS: Final = 40


def install(submission: str, record: Record, also: Callable[[str, tuple], None] | None = None) -> Callable[[int], str]:
    """Add the audit hook; ``submission`` is the file whose frames make an event the submission's.

    Returns the guard's frame reader: the file ``depth`` frames above its caller, read quietly.

    ``also`` handles every event first (the worker's process watch): one hook for both, as
    each hook costs every event a Python call.
    """
    own = {submission, os.path.abspath(submission)}
    getframe = sys._getframe  # bound before the submission runs: a replacement would run unjudged in caller_file
    stdlib = os.path.dirname(os.__file__) + os.sep
    main_thread = threading.main_thread()
    busy = threading.local()
    seen: set[tuple[str, int | None]] = set()
    exempt = {(e.event, e.site): e for e in EXEMPTIONS}

    def library(filename: str) -> bool:
        return (filename.startswith(stdlib) and "-packages" not in filename) or filename.startswith("<")

    def where(frame: Any) -> str:
        """A standard-library frame as ``path:qualname``, its path relative to the library."""
        return f"{frame.f_code.co_filename[len(stdlib):]}:{frame.f_code.co_qualname}"

    def owned(frame: Any, filename: str) -> bool:
        """The submission's file, or code run from text in its namespace (a dataclass's generated methods);
        ``filename`` is the frame's code's (each read of ``f_code`` is an audit event of its own)."""
        return filename in own or (filename.startswith("<string") and frame.f_globals.get("__file__") in own)

    def exempted(event: str, args: tuple, passed: list[Any]) -> bool:
        """Whether the event was raised at one of ``EXEMPTIONS``' sites (``passed``: library frames, innermost first)."""
        if not passed or not passed[0].f_code.co_filename.startswith(stdlib):
            return False
        rule = exempt.get((event, where(passed[0])))
        if rule is None:
            return False
        if rule.caller and (len(passed) < 2 or where(passed[1]) != rule.caller):
            return False
        if rule.via and not any(where(frame) == rule.via for frame in passed[1:]):
            return False
        return not rule.sources or (bool(args) and str(args[0]).endswith(".py"))

    def attribute(event: str, args: tuple) -> tuple[bool, int | None, bool]:
        """(the submission's, its innermost line on the stack, whether an import runs inside the submission's call)."""
        frame = sys._getframe(3)  # past attribute, _judge and hook
        # The line (and an import under way) matter for an event not the submission's only where _judge
        # still weighs it (events no library needs, ctypes): for any other, the walk ends with the verdict
        # (the grader's own guard reads a frame at every torch call; its stack is not walked for nothing).
        wants_line = event in _NO_LIBRARY_NEEDS or event.startswith("ctypes.")
        passed: list[Any] = []
        actor: bool | None = None
        line = None
        importing = False
        while frame is not None:
            filename = frame.f_code.co_filename
            frozen_import = filename.startswith("<frozen importlib")
            mine = owned(frame, filename)
            if mine:
                if line is None and filename in own:
                    line = frame.f_lineno
                if actor is None:
                    actor = True
            elif frozen_import and line is None:
                importing = True  # a module is being imported inside the submission's call
            if not mine and actor is None:
                if frozen_import:
                    if event != "import":
                        actor = False  # a module's own body running at its import
                elif library(filename):
                    passed.append(frame)
                    if event == "import" and frame.f_code.co_name == "<module>":
                        actor = False  # a module importing what it needs
                else:
                    actor = False  # torch's, numpy's or the grader's own code
            if actor is not None and (line is not None or not (actor or wants_line)):
                break
            frame = frame.f_back
        if actor and exempted(event, args, passed):
            actor = False
        del frame, passed
        return bool(actor), line, importing

    def hook(event: str, args: tuple) -> None:
        if event in _FREQUENT or getattr(busy, "on", False):
            return  # the hook's own frame reads, and the guard's (``caller_file``)
        if also is not None:
            also(event, args)
        if event not in _WATCHED and not event.startswith("ctypes."):
            return
        if event == "object.__getattr__" and (len(args) < 2 or args[1] not in _WATCHED_ATTRIBUTES):
            return  # f_code and the like: read by every traceback, the grader's own included
        busy.on = True
        try:
            blocked = _judge(event, args)
        finally:
            busy.on = False
        if blocked:
            raise PermissionError(f"{event} is not allowed while a submission is graded")

    def _judge(event: str, args: tuple) -> bool:
        ours, line, importing = attribute(event, args)
        on_stack = line is not None
        if on_stack and not ours and not importing and event in _NO_LIBRARY_NEEDS:
            ours = True  # called back from torch's or numpy's code (tree_map(gc.get_objects, ...)): still the file's
        if event.startswith("ctypes.") and (on_stack or threading.current_thread() is not main_thread):
            blocked = event in RAW_MEMORY_EVENTS
            _note(_describe(event, args), SEEN["memory"] + (" (refused)" if blocked else ""), line)
            return blocked
        if not ours:
            return False
        if event == "import":
            name = str(args[0]) if args else "?"
            verdict = classify_module(name)
            if verdict is not None:
                _note(f"import {name}", f"{SEEN['import']} ({name})", line)
            return False
        if event == "object.__getattr__":
            why = "dunder" if args[1] == "__code__" else "frames"
        else:
            why = _WHY_OF_EVENT.get(event, "process")
        _note(_describe(event, args), SEEN[why], line)
        return False

    def _note(construct: str, why: str, line: int | None) -> None:
        key = (construct, line)
        if key in seen or len(seen) >= _MAX_EVENTS:
            return
        seen.add(key)
        record(construct, f"seen at run time: {why}", line)

    def caller_file(depth: int) -> str:
        """The file of the code ``depth`` frames above the caller, read without the hook judging it:
        only a file name leaves, never a frame."""
        was = getattr(busy, "on", False)
        busy.on = True
        try:
            return getframe(depth + 1).f_code.co_filename
        except ValueError:
            return ""
        finally:
            busy.on = was

    sys.addaudithook(hook)
    return caller_file


def _describe(event: str, args: tuple) -> str:
    """The event as a person reads it: ``os.fork()``, ``open('/proc/self/mem')``, ``compile('...')``."""
    if event in ("compile", "open") and args:
        first = args[0]
        text = first.decode(errors="replace") if isinstance(first, bytes) else str(first)
        text = " ".join(text.split())
        return f"{event}({text[:60]!r})"
    if event == "object.__getattr__" and len(args) > 1:
        return f"{type(args[0]).__name__}.{args[1]}"
    return f"{event}()"
