"""Finding the submissions of a batch: a folder of ``.py`` files, a folder of folders, or a ``.zip`` of either.

Every submission found becomes a ``Submission``, also one that cannot be graded
(a file that is not ``.py``, a folder without its entry file, a zip member that
cannot be read): those carry the reason as ``problem`` and still get a row in the
results, so that no candidate goes missing unseen. Hidden files are left out.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

__all__ = ["Submission", "collect", "MEMBER_BYTES", "ARCHIVE_BYTES"]

MEMBER_BYTES = 4 * 1024 * 1024
"""Largest file taken from a zip: a hand-written engine is a few kilobytes."""
ARCHIVE_BYTES = 512 * 1024 * 1024
"""Largest total taken from a zip: what fits on a laptop's temp folder without a second thought."""
_IGNORED = re.compile(r"^(\.|__pycache__$|__MACOSX$)")
_UNSAFE = re.compile(r"[^\w.-]+")
_NOT_PYTHON = "not a Python file: a submission is a .py file, or a folder holding its entry file"


@dataclass(frozen=True)
class Submission:
    """One candidate's work: ``id`` names its results, ``path`` is the file to grade."""

    id: str
    path: Path | None
    origin: str
    """Where it came from, as the interviewer knows it: ``subs/alice.py`` or ``subs.zip:alice/solution.py``."""
    problem: str = ""
    """Why it cannot be graded; empty when it can."""


def collect(path: Path, entry: str, scratch: Path, exclude: Path | None = None) -> list[Submission]:
    """The submissions under ``path``, sorted by id. A zip is unpacked into ``scratch``;
    ``exclude`` (the batch's own output folder) is never taken for a submission.

    Raises HarnessError when ``path`` is neither a folder nor a zip, or holds no submission.
    """
    path = Path(path)
    if path.is_dir():
        found = _from_folder(path, entry, str(path), exclude)
    elif path.is_file() and zipfile.is_zipfile(path):
        found = _from_zip(path, entry, scratch)
    elif path.is_file():
        raise HarnessError(f"{path}: not a folder or a .zip (to grade one file: grade {path})")
    else:
        raise HarnessError(f"{path}: no such folder or file")
    if not found:
        raise HarnessError(f"{path}: no submissions found (.py files, or folders holding {entry})")
    return _unique_ids(found)


def _from_folder(root: Path, entry: str, label: str, exclude: Path | None) -> list[Submission]:
    found = []
    skip = exclude.resolve() if exclude is not None else None
    for item in sorted(root.iterdir()):
        if _IGNORED.match(item.name) or (skip is not None and item.resolve() == skip):
            continue
        origin = f"{label}/{item.name}" if label else item.name
        if item.is_dir():
            target = item / entry
            if target.is_file():
                found.append(Submission(item.name, target, f"{origin}/{entry}"))
            else:
                found.append(Submission(item.name, None, origin, _no_entry(entry, item)))
        elif item.suffix == ".py":
            found.append(Submission(item.stem, item, origin))
        elif item.is_file():
            found.append(Submission(item.stem, None, origin, _NOT_PYTHON))
    return found


def _no_entry(entry: str, folder: Path) -> str:
    others = sorted(p.name for p in folder.glob("*.py"))[:3]
    seen = f" (it holds {', '.join(others)}; choose the file with --entry)" if others else ""
    return f"no {entry} in the folder{seen}"


def _from_zip(archive: Path, entry: str, scratch: Path) -> list[Submission]:
    """Unpack the archive's files into ``scratch`` (names made safe, sizes capped) and group them by submission.

    A zip of a folder wraps everything in that folder: the grouping starts inside it.
    A member that cannot be read (corrupt, encrypted, too large) marks its submission
    with the reason instead of being unpacked.
    """
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise HarnessError(f"{archive}: cannot open the zip: {exc}") from None
    with zf:
        members: dict[tuple[str, ...], zipfile.ZipInfo] = {}
        for info in zf.infolist():
            parts = tuple(p for p in info.filename.replace("\\", "/").split("/") if p not in ("", ".", ".."))
            if not info.is_dir() and parts and not any(_IGNORED.match(p) for p in parts):
                members[parts] = info
        prefix: tuple[str, ...] = ()
        while True:
            tops = {parts[len(prefix)] for parts in members}
            inner = [parts for parts in members if len(parts) > len(prefix) + 1]
            if len(tops) != 1 or len(inner) != len(members):
                break
            (top,) = tops
            if (*prefix, top, entry) in members:
                break
            prefix = (*prefix, top)
        groups: dict[tuple[str, bool], list[tuple[str, ...]]] = {}
        for parts in members:
            rest = parts[len(prefix):]
            if len(rest) == 1:
                groups.setdefault((rest[0], False), []).append(parts)
            elif len(rest) > 1:
                groups.setdefault((rest[0], True), []).append(parts)
        found, total = [], 0
        for (name, is_folder), parts_list in sorted(groups.items()):
            here = "/".join(prefix + (name,))
            if not is_folder and not name.endswith(".py"):
                found.append(Submission(name.rsplit(".", 1)[0] or name, None, f"{archive}:{here}", _NOT_PYTHON))
                continue
            problem = ""
            for parts in sorted(parts_list):
                try:
                    data = _read_member(zf, members[parts])
                except Exception as exc:  # corrupt, bad CRC, encrypted, unknown compression: this row's problem
                    problem = problem or f"cannot read {'/'.join(parts)} from the zip: {exc}"
                    continue
                total += len(data)
                if total > ARCHIVE_BYTES:
                    raise HarnessError(f"{archive}: more than {_size(ARCHIVE_BYTES)} to unpack")
                target = scratch.joinpath(*parts[len(prefix):])
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            if not is_folder:
                found.append(Submission(name[:-3], None if problem else scratch / name, f"{archive}:{here}", problem))
                continue
            target = scratch / name / entry
            if not problem and not target.is_file():
                problem = _no_entry(entry, scratch / name)
            found.append(Submission(name, None if problem else target, f"{archive}:{here}/{entry}", problem))
    return found


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """The member's bytes, refusing more than MEMBER_BYTES whatever its header claims."""
    if info.file_size > MEMBER_BYTES:
        raise ValueError(f"larger than {_size(MEMBER_BYTES)}")
    with zf.open(info) as f:
        data = f.read(MEMBER_BYTES + 1)
    if len(data) > MEMBER_BYTES:
        raise ValueError(f"larger than {_size(MEMBER_BYTES)}")
    return data


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 else f"{n // 2**10} KiB"


def _unique_ids(found: list[Submission]) -> list[Submission]:
    """Ids safe as file names and distinct: ``Alice Smith.py`` -> ``Alice_Smith``; a repeat gets ``-2``."""
    seen: set[str] = set()
    out = []
    for s in sorted(found, key=lambda s: (s.id, s.origin)):
        base = _UNSAFE.sub("_", s.id).lstrip(".")[:100] or "submission"
        sid, n = base, 1
        while sid.lower() in seen:
            n += 1
            sid = f"{base}-{n}"
        seen.add(sid.lower())
        out.append(Submission(sid, s.path, s.origin, s.problem))
    return out
