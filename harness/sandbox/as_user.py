"""Start bubblewrap as another user, with the paths its view binds within that user's reach.

A root grader may start the sandbox as an unprivileged user (``Launcher(user=...)``)
while the Python installation lives where only root can go (pyenv under a 0700
``/root``). Run as root, ``python -m harness.sandbox.as_user UID GID PATH... -- bwrap ...``
enters a private mount namespace, covers each folder that blocks the user's way to a
PATH with an empty tmpfs, binds the PATHs below it again at their own place, then
becomes the user and executes bubblewrap. Nothing changes on the host, and the user
sees nothing of the covered folders but those PATHs.
"""

from __future__ import annotations

import os
import stat
import sys

from harness.sandbox import _linux

_PROC_FD = "/proc/self/fd/"


def blocking_folder(path: str, uid: int, gid: int) -> str | None:
    """The outermost folder above ``path`` that ``uid``/``gid`` (no other groups) may not pass through."""
    current = "/"
    for part in [p for p in path.split("/") if p][:-1]:
        current = os.path.join(current, part)
        try:
            info = os.stat(current)
        except OSError:
            return None
        bit = stat.S_IXUSR if info.st_uid == uid else stat.S_IXGRP if info.st_gid == gid else stat.S_IXOTH
        if not info.st_mode & bit:
            return current
    return None


def make_reachable(paths: list[str], uid: int, gid: int) -> None:
    """In this (private) mount namespace: cover each blocking folder, bind the paths under it again."""
    covered: dict[str, list[tuple[str, int]]] = {}
    for path in paths:
        top = blocking_folder(path, uid, gid)
        if top is not None:
            # Opened before the tmpfs hides it; as root, whatever the folders above allow.
            covered.setdefault(top, []).append((path, os.open(path, os.O_PATH | os.O_CLOEXEC)))
    for top, inner in covered.items():  # each the outermost on its way: none lies inside another
        _linux.mount("tmpfs", top, "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, "size=64k,mode=0755")
        for path, fd in inner:
            if os.path.isdir(_PROC_FD + str(fd)):
                os.makedirs(path, 0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
                open(path, "a").close()
            _linux.mount(_PROC_FD + str(fd), path, None, _linux.MS_BIND | _linux.MS_REC)
            os.close(fd)


def main(argv: list[str]) -> None:
    split = argv.index("--")
    uid, gid, paths, command = int(argv[0]), int(argv[1]), argv[2:split], argv[split + 1:]
    _linux.unshare(_linux.CLONE_NEWNS)
    _linux.mount("none", "/", None, _linux.MS_REC | _linux.MS_PRIVATE)
    make_reachable(paths, uid, gid)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    os.execvp(command[0], command)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (OSError, ValueError) as exc:
        print(f"the sandbox could not be started as the user: {exc}", file=sys.stderr)
        sys.exit(1)
