"""A process that has imported torch and forks one worker per request.

Importing torch dominates start-up, so it happens once, here, before any torch
op has run (a process that has run ops may hold thread pools that do not
survive a fork). Each worker is a fresh fork: its own session and process
group, working directory, memory limit and captured output. The zygote itself
never imports candidate code.

Run as ``python -m harness.sandbox.zygote CONTROL_SOCKET``.
"""

from __future__ import annotations

import ctypes
import gc
import os
import resource
import signal
import socket
import sys

_PR_SET_CHILD_SUBREAPER = 36


def main(control_path: str) -> None:
    import torch

    # Submissions work on tiny tensors; one thread each keeps two workers from fighting
    # over the machine's cores.
    torch.set_num_threads(1)

    from harness.sandbox import evaluator
    from harness.sandbox.channel import recv_message, send_message

    gc.freeze()  # torch's import objects are never garbage: keep collections in workers short
    # Orphaned descendants of a worker (a daemonised grandchild) reparent to us,
    # so the grader can still find and kill them.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped automatically
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.connect(control_path)
    send_message(control, {"kind": "zygote_ready", "pid": os.getpid()})
    while True:
        order = recv_message(control)
        if order is None:
            os._exit(0)
        pid = os.fork()
        if pid == 0:
            _become_worker(control, order, evaluator.serve)
        send_message(control, {"pid": pid})


def _become_worker(control: socket.socket, order: dict, serve) -> None:
    code = 0
    try:
        control.close()
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.chdir(order["workdir"])
        _redirect(0, os.devnull, os.O_RDONLY)
        _redirect(1, "stdout.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        _redirect(2, "stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        _limit_memory(int(order["memory_mb"]))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        file_limit = 64 * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(order["data_path"])
        sock.sendall(order["token"].encode())
        serve(sock, order["path"], order["class_name"])
    except BaseException:  # the worker's end is reported by the parent as a crash
        code = 1
    finally:
        os._exit(code)


def _redirect(fd: int, path: str, flags: int) -> None:
    target = os.open(path, flags, 0o600)
    os.dup2(target, fd)
    os.close(target)


def _limit_memory(megabytes: int) -> None:
    with open("/proc/self/status") as status:
        vm = next((int(line.split()[1]) for line in status if line.startswith("VmSize:")), 0)
    limit = vm * 1024 + megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


if __name__ == "__main__":
    main(sys.argv[1])
