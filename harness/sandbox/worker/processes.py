"""Telling a person that a submission tried to start a process (the worker's seccomp filter refuses it).

``_linux.confine_worker`` makes every fork, exec and non-thread clone fail in the worker;
this module only makes the attempt visible, as a review entry at the submission's line.
A PEP 578 audit hook sees Python's own ways in (``os.fork``, ``os.posix_spawn``, the
``os.exec*`` and ``os.spawn*`` families, ``os.system``, ``subprocess``, ``pty``,
``multiprocessing`` with any start method) and the C library's process functions reached
through ``ctypes`` (looked up by name, ``syscall`` included). What it misses is still
refused by the kernel: the report can only say less, never let more through.
"""

from __future__ import annotations

from typing import Any, Callable, Final

__all__ = ["handler"]

_EVENTS: Final = {
    "os.fork": "os.fork()",
    "os.forkpty": "os.forkpty()",
    "os.posix_spawn": "os.posix_spawn()",
    "os.exec": "os.exec*()",
    "os.system": "os.system()",
    "subprocess.Popen": "subprocess",
}
_C_FUNCTIONS: Final = frozenset({
    "fork", "vfork", "_Fork", "clone", "clone3", "execve", "execveat", "fexecve", "execv", "execvp", "execvpe",
    "execl", "execlp", "execle", "posix_spawn", "posix_spawnp", "system", "popen", "daemon",
})
_WHY: Final = ("tried to start a process ({how}): the sandbox refuses it, and an autograd engine has no "
               "use for one (work in another process escapes the worker's time, memory and runtime checks)")

_WHY_SYSCALL: Final = ("reached the C library's syscall() through ctypes: any system call by number, starting a "
                       "process among them, out of sight of Python's own events (the sandbox refuses a new "
                       "process whatever the route)")


def handler(note: Callable[[str, str, int | None], None],
            line: Callable[[], int | None]) -> Callable[[str, tuple[Any, ...]], None]:
    """An audit handler that calls ``note(construct, why, line())`` once per submission line that tries to start
    a process. The worker's one audit hook serves it with its others (every audit hook costs each event a Python
    call: ``id()`` raises one, and an engine calls it per node); install it before the submission is imported.
    Watches ``fork_exec`` at once."""
    seen: set[int | None] = set()

    def report(how: str, construct: str = "a new process", why: str = _WHY) -> None:
        where = line()
        if where in seen:
            return  # subprocess raises two events for one attempt; one entry per line is enough
        seen.add(where)
        note(construct, why.format(how=how), where)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        try:
            if event in _EVENTS:
                report(_EVENTS[event])
            elif event == "ctypes.dlsym" and len(args) == 2 and args[1] in _C_FUNCTIONS:
                report(f"the C library's {args[1]}() through ctypes")
            elif event == "ctypes.dlsym" and len(args) == 2 and args[1] == "syscall":
                report("", "syscall() through ctypes", _WHY_SYSCALL)
        except Exception:
            pass  # a hook that raises would fail the grader's own calls too

    _watch_fork_exec(report)
    return hook


def _watch_fork_exec(report: Callable[[str], None]) -> None:
    # multiprocessing's spawn and forkserver start methods call _posixsubprocess.fork_exec
    # directly, which raises no audit event of its own.
    try:
        import _posixsubprocess
    except ImportError:
        return
    fork_exec = _posixsubprocess.fork_exec

    def watched(*args: Any, **kwargs: Any) -> Any:
        report("_posixsubprocess.fork_exec()")
        return fork_exec(*args, **kwargs)

    _posixsubprocess.fork_exec = watched
