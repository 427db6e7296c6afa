"""Why the sandbox did not start, in plain words: which path, permission or kernel setting, and what to do.

bubblewrap and Python end a failed start with one terse line ("execvp ...: No such
file or directory", "Creating new namespace failed: ..."). The report states instead
what is wrong on this machine and how to fix it, and keeps that line for reference.
"""

from __future__ import annotations

import os
import pwd
import re
import stat
from pathlib import Path

__all__ = ["explain"]

_USERNS_SETTINGS = (
    ("/proc/sys/kernel/unprivileged_userns_clone", "0", "sysctl -w kernel.unprivileged_userns_clone=1"),
    ("/proc/sys/user/max_user_namespaces", "0", "sysctl -w user.max_user_namespaces=15000"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1",
     "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile that allows bwrap userns"),
)


def explain(detail: str, user: str | None = None) -> str:
    """``detail`` (the last line the failed start printed) as a cause and a remedy, then the line itself."""
    cause = _cause(detail, user)
    said = f" (bubblewrap said: {detail})" if detail else ""
    return f"{cause}{said}" if cause else f"the sandbox did not start{': ' + detail if detail else ''}"


def _cause(detail: str, user: str | None) -> str:
    lowered = detail.lower()
    if "namespace" in lowered or "uid map" in lowered or "setting up uid" in lowered:
        return _namespaces_refused()
    path = _path_in(detail)
    if path:
        blocked = _blocked_parent(path, user)
        if blocked:
            return blocked
        if ("no such file" in lowered or "not found" in lowered) and os.path.exists(path):
            return (f"the sandbox cannot see {path}, which exists on this machine: bubblewrap binds the Python "
                    "installation at its own path, and this one was not among what it binds (report it, with "
                    "`python -c 'import sys; print(sys.prefix, sys.base_prefix, sys.path)'`)")
    if "modulenotfounderror" in lowered or "no module named" in lowered:
        return ("Python started in the sandbox but could not import the grader or torch: a folder on its path "
                "is not visible there (an install in a place neither the prefix nor site-packages covers)")
    return ""


def _path_in(detail: str) -> str:
    found = re.search(r"(/[^\s:'\"]+)", detail)
    return found.group(1) if found else ""


def _blocked_parent(path: str, user: str | None) -> str:
    """The first folder above ``path`` that the sandbox's user may not enter, described, or ""."""
    uid = _uid(user)
    folder = Path(path)
    for parent in reversed(folder.parents):
        try:
            info = parent.stat()
        except OSError:
            continue
        if uid == 0 or info.st_uid == uid:
            continue
        if not info.st_mode & stat.S_IXOTH:
            who = f"the user {user}" if user else "this user"
            return (f"{who} cannot enter {parent} (mode {stat.filemode(info.st_mode)}, owner "
                    f"{_owner(info.st_uid)}), above {path}: install Python (or make the venv) outside it, "
                    f"or let others pass through with `chmod o+x {parent}`")
    return ""


def _namespaces_refused() -> str:
    for setting, refusing, remedy in _USERNS_SETTINGS:
        try:
            value = Path(setting).read_text().strip()
        except OSError:
            continue
        if value == refusing:
            name = setting.removeprefix("/proc/sys/").replace("/", ".")
            return (f"the kernel refuses new user namespaces to unprivileged users ({name} = {value}), and "
                    f"bubblewrap needs one: as root, {remedy}; or install bubblewrap setuid root")
    return ("the kernel refused bubblewrap a new namespace, though no kernel setting here forbids it: a "
            "seccomp or AppArmor profile is the likely cause (a container's default profile refuses "
            "namespaces; run it with --security-opt seccomp=unconfined, or grade on the host)")


def _uid(user: str | None) -> int:
    if user is None:  # bubblewrap runs as the grader; as root it makes the folders above what it binds
        return os.geteuid()
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return -1


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
