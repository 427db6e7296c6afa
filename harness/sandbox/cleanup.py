"""Removing a submission's folder on the grader's side, however the submission left it."""

from __future__ import annotations

import os
import time

__all__ = ["remove_tree"]

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def remove_tree(top: str, seconds: float = float("inf")) -> None:
    """Delete a folder however deep it nests and whatever its modes, never following a link.

    A submission controls what is inside: shutil.rmtree recurses once per level and
    works with whole paths, so 1,500 nested folders stop it (RecursionError, or paths
    longer than the kernel accepts) and the rest stays on the host's disk. Here one
    descriptor walks down and back up, and every name is relative to it. Each removal
    costs time in proportion to the depth (tens of thousands of nested folders take
    minutes), so after ``seconds`` the rest is left where it is.
    """
    deadline = time.monotonic() + seconds
    try:
        fd = os.open(top, _DIRECTORY)
    except OSError:
        return
    names: list[str] = []
    try:
        while time.monotonic() < deadline:
            entries = list(os.scandir(fd))
            folder = next((e.name for e in entries if e.is_dir(follow_symlinks=False)), None)
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False):
                    os.unlink(entry.name, dir_fd=fd)
            if folder is not None:
                os.chmod(folder, 0o700, dir_fd=fd)  # a folder the submission made unreadable
                inner = os.open(folder, _DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = inner
                names.append(folder)
            elif names:
                outer = os.open("..", _DIRECTORY, dir_fd=fd)
                os.close(fd)
                fd = outer
                os.rmdir(names.pop(), dir_fd=fd)
            else:
                break
    except OSError:
        pass  # clean-up never changes a verdict
    finally:
        os.close(fd)
    try:
        os.rmdir(top)
    except OSError:
        pass
