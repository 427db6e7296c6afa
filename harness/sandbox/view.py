"""What the sandbox must see of this machine: the Python installation, wherever it lives.

The interpreter, its prefix and base prefix (a venv's and the Python it was made from),
site-packages and the folders its ``.pth`` files and editable installs point to are each
bound read-only at their own path, after the sandbox's private ``/tmp`` is mounted (a venv
under ``/tmp`` stays visible) and with the folders above them made by bubblewrap (a 0700
home above a pyenv Python does not stop the unprivileged sandbox user). Started as another
user by a root grader, bubblewrap first gets those paths within that user's reach
(``as_user``).

Never bound: the grader's checkout as a whole, or any of its packages (the reference engine,
the bug catalogue, the spec library and the tests are no submission's business). The grader's
modules the sandbox runs (``zone``) are bound one file at a time under ``/grader/harness``; when
the grader is installed inside a bound site-packages (a regular install), its packages there
are covered by an empty read-only tmpfs.
"""

from __future__ import annotations

import ast
import os
import site
import sys
from pathlib import Path
from typing import Final

from harness.sandbox.zone import zone_files

__all__ = ["python_paths", "bubblewrap_view", "under"]

SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")


def under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def python_paths(checkout: str | None = None) -> list[str]:
    """The folders the interpreter and its installed packages live in, outermost first, without repeats.

    ``checkout`` (the grader's source tree) is never bound whole, nor anything inside it (or
    in any other copy of the grader) that a ``.pth`` file or an editable install points to:
    its reference engine is no submission's business. An installation living there is bound.
    """
    prefixes = ["/usr", sys.base_prefix, sys.prefix, sys.exec_prefix, sys.base_exec_prefix,
                os.path.dirname(os.path.realpath(sys.executable))]
    packages = [p for p in site.getsitepackages() + [site.getusersitepackages()] if os.path.isdir(p)]
    found = [os.path.realpath(p) for p in prefixes + packages if p and os.path.isdir(p)]
    for folder in packages:
        for target in _installed_elsewhere(folder):
            target = os.path.realpath(target)
            if not (checkout and (under(target, checkout) or under(checkout, target))) and not _grader_tree(target):
                found.append(target)
    chosen: list[str] = []
    for path in sorted(set(found), key=len):
        if not any(under(path, c) for c in chosen):
            chosen.append(path)
    # An interpreter reached through a symlink (a venv) must exist at its own path as well.
    executable_dir = os.path.dirname(sys.executable)
    if os.path.isdir(executable_dir) and not any(under(executable_dir, c) for c in chosen):
        chosen.append(executable_dir)
    return chosen


def _grader_tree(path: str) -> bool:
    """A checkout of this grader, or a package of one (an editable install of another copy, of any version)."""
    return any(os.path.isdir(os.path.join(top, "harness", "sandbox"))
               or os.path.isfile(os.path.join(top, "reference", "engine.py"))
               for top in (path, os.path.dirname(path)))


def _installed_elsewhere(site_packages: str) -> list[str]:
    """Folders outside ``site_packages`` that its ``.pth`` files and editable installs import from."""
    found: list[str] = []
    try:
        names = sorted(os.listdir(site_packages))
    except OSError:
        return found
    for name in names:
        path = os.path.join(site_packages, name)
        if name.endswith(".pth"):
            try:
                lines = Path(path).read_text(errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.strip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    target = os.path.join(site_packages, line)
                    if os.path.isdir(target):
                        found.append(target)
        elif name.startswith("__editable__") and name.endswith("_finder.py"):
            found += [p for p in _editable_mapping(path) if os.path.exists(p)]
    return found


def _editable_mapping(finder: str) -> list[str]:
    """The package folders a setuptools editable finder maps names to (its MAPPING literal)."""
    try:
        tree = ast.parse(Path(finder).read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return []
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else \
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id == "MAPPING" and node.value is not None:
            try:
                mapping = ast.literal_eval(node.value)
            except ValueError:
                return []
            return [str(p) for p in mapping.values()] if isinstance(mapping, dict) else []
    return []


def bubblewrap_view(harness_dir: Path, as_root: bool) -> tuple[list[str], list[str]]:
    """bwrap's arguments (new namespaces, no capabilities, a read-only view of what Python needs) and
    the host paths they bind (which bubblewrap, started as another user, must be able to reach)."""
    args = ["--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if as_root:
        # Real root outside, so no user namespace (its uid 65534 would map to root): the
        # template starts as root with only these two capabilities and a zygote gives them up
        # for uid 65534 before anything of a submission's exists.
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-user"]
    sources: list[str] = []
    made: set[str] = {"/"}

    def parents(path: str) -> None:
        parent = os.path.dirname(path)
        if parent not in made:
            parents(parent)
            args.extend(["--perms", "0755", "--dir", parent])
            made.add(parent)

    def bind(source: str, target: str) -> None:
        parents(target)
        args.extend(["--ro-bind", source, target])
        made.add(target)
        sources.append(source)

    for top in ("/bin", "/lib", "/lib32", "/lib64", "/sbin"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
            made.add(top)
    installation = python_paths(str(harness_dir.parent))
    for path in installation:
        if not under(path, "/tmp"):
            bind(path, path)
    for path in SYSTEM_FILES:
        if os.path.exists(path):
            bind(path, path)
    # Everything under /tmp only after the private /tmp, which would hide it.
    args += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp"]
    made.add("/tmp")
    for path in installation:
        if under(path, "/tmp"):
            bind(path, path)
    root = harness_dir.parent
    for package in own_packages(installation, root):
        args += ["--tmpfs", package, "--remount-ro", package]
    for file in zone_files(root):
        bind(str(file), str(Path("/grader") / file.relative_to(root)))
    args += ["--chdir", "/tmp", "--setenv", "PYTHONPATH", "/grader", "--setenv", "HOME", "/tmp"]
    return args, sources


OWN_PACKAGES: Final = ("harness", "reference", "candidate_template")
"""The grader's top-level packages, as ``pyproject.toml`` lists them (``tests/test_installed.py`` holds
this to the wheel's own folders)."""


def own_packages(installation: list[str], root: Path) -> list[str]:
    """The grader's packages inside the folders the sandbox binds (a regular install puts them in
    site-packages, beside torch), wherever Python imports from: each is covered, so that nothing of
    it is read there."""
    folders = {os.path.realpath(p) for p in [*sys.path, str(root)] if p and os.path.isdir(p)}
    found = []
    for folder in sorted(folders):
        if any(under(folder, path) for path in installation):
            found += [os.path.join(folder, top) for top in OWN_PACKAGES
                      if os.path.isdir(os.path.join(folder, top)) and not os.path.islink(os.path.join(folder, top))]
    return found
