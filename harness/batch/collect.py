"""Finding the submissions of a batch: a folder of ``.py`` files, a folder of folders, or a ``.zip`` of either.

Every submission found becomes a ``CollectedSubmission``, also one that cannot be graded
(a file that is not ``.py``, a folder without its entry file, a zip member that
cannot be read): those carry the reason as ``problem`` and still get a row in the
results, so that no candidate goes missing unseen. Hidden files are left out.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from harness.preflight import MAX_SOURCE_BYTES
from harness.report.safety import printable

__all__ = ["CollectedSubmission", "collect", "MEMBER_BYTES", "SUBMISSION_BYTES", "SUBMISSION_MEMBERS", "ARCHIVE_BYTES",
           "ARCHIVE_MEMBERS", "NAME_CHARS"]

MEMBER_BYTES = 4 * 1024 * 1024
"""Largest file taken from a zip: a hand-written engine is a few kilobytes."""
SUBMISSION_BYTES = 16 * 1024 * 1024
"""Largest total unpacked for one submission of a zip."""
SUBMISSION_MEMBERS = 200
"""Most files unpacked for one submission of a zip."""
ARCHIVE_BYTES = 512 * 1024 * 1024
"""Largest total unpacked from a zip: what fits on a laptop's temp folder without a second thought."""
ARCHIVE_MEMBERS = 10_000
"""Most files unpacked from a zip."""
NAME_CHARS = 255
"""Longest name of one file or folder in a zip (a path's part), as most file systems allow."""
_IGNORED = re.compile(r"^(\.|__pycache__$|__MACOSX$)")
_UNSAFE = re.compile(r"[^\w.-]+")
_NOT_PYTHON = "not a Python file: a submission is a .py file or a notebook, or a folder holding its entry file"
_SOURCE_SUFFIXES = (".py", ".ipynb")
_MARKER = ".unpacked-by-grade-batch"
"""In a folder that a batch unpacked a zip into: only such a folder is cleared before unpacking again."""


@dataclass(frozen=True)
class CollectedSubmission:
    """One candidate's work: ``id`` names its results, ``path`` is the file to grade."""

    id: str
    path: Path | None
    origin: str
    """Where it came from, as the interviewer knows it: ``subs/alice.py`` or ``subs.zip:alice/solution.py``."""
    problem: str = ""
    """Why it cannot be graded; empty when it can."""


def collect(path: Path, entry: str, scratch: Path, exclude: Path | None = None) -> list[CollectedSubmission]:
    """The submissions under ``path``, sorted by id. A zip is unpacked into ``scratch``;
    ``exclude`` (the batch's own output folder) is never taken for a submission.

    Nothing a candidate chose is followed or read whole: a symbolic link (file, folder or
    zip member), a pipe or a device, an oversized file or an archive member past a cap is
    that submission's row with the reason, and is never opened.

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


def label(name: str) -> str:
    """A file name as text every output can hold: undecodable bytes and control characters escaped."""
    return printable(name)


def _from_folder(root: Path, entry: str, label_root: str, exclude: Path | None) -> list[CollectedSubmission]:
    found = []
    skip = exclude.resolve() if exclude is not None else None
    for item in sorted(root.iterdir()):
        if _IGNORED.match(item.name):
            continue
        origin = f"{label(label_root)}/{label(item.name)}"
        try:
            info = item.lstat()
        except OSError as exc:
            found.append(CollectedSubmission(item.stem, None, origin, f"cannot read: {exc.strerror}"))
            continue
        if stat.S_ISDIR(info.st_mode):
            if skip is not None and item.resolve() == skip:
                continue
            found.append(_folder_submission(item, entry, origin))
        elif stat.S_ISLNK(info.st_mode):
            found.append(CollectedSubmission(item.stem, None, origin, _LINK))
        elif not item.name.endswith(_SOURCE_SUFFIXES):
            found.append(CollectedSubmission(item.stem, None, origin, _NOT_PYTHON))
        else:
            found.append(CollectedSubmission(item.stem, *_file_or_problem(item, info, origin)))
    return found


_LINK = "a symbolic link: a batch grades the files it is given and never follows a link"


def _file_or_problem(path: Path, info: os.stat_result, origin: str) -> tuple[Path | None, str, str]:
    """(path, origin, "") for a regular file under the size cap, else (None, origin, why not)."""
    if stat.S_ISLNK(info.st_mode):
        return None, origin, _LINK
    if not stat.S_ISREG(info.st_mode):
        return None, origin, "not a regular file: a pipe, device or socket is never read"
    if info.st_size > MAX_SOURCE_BYTES:
        return None, origin, f"{info.st_size:,} bytes is too large for a submission (at most {MAX_SOURCE_BYTES:,})"
    return path, origin, ""


def _folder_submission(folder: Path, entry: str, origin: str) -> CollectedSubmission:
    target = folder / entry
    try:
        info = target.lstat()
    except FileNotFoundError:
        return CollectedSubmission(folder.name, None, origin, _no_entry(entry, folder))
    except OSError as exc:
        return CollectedSubmission(folder.name, None, origin, f"cannot read {entry}: {exc.strerror}")
    if stat.S_ISDIR(info.st_mode):
        return CollectedSubmission(folder.name, None, origin, _no_entry(entry, folder))
    return CollectedSubmission(folder.name, *_file_or_problem(target, info, f"{origin}/{label(entry)}"))


def _no_entry(entry: str, folder: Path) -> str:
    others = []
    with os.scandir(folder) as listing:
        for item in listing:
            if item.name.endswith(_SOURCE_SUFFIXES) and item.is_file(follow_symlinks=False):
                others.append(label(item.name))
            if len(others) > 100:
                break
    others = sorted(others)[:3]
    seen = f" (it holds {', '.join(others)}; choose the file with --entry)" if others else ""
    return f"no {entry} in the folder{seen}"


class _Caps:
    """What a zip may still unpack, for the whole batch."""

    def __init__(self) -> None:
        self.bytes = ARCHIVE_BYTES
        self.members = ARCHIVE_MEMBERS


def _from_zip(archive: Path, entry: str, scratch: Path) -> list[CollectedSubmission]:
    """Unpack the archive's files into ``scratch`` (names made safe, sizes capped) and group them by submission.

    A zip of a folder wraps everything in that folder: the grouping starts inside it.
    A submission with a member that cannot be unpacked (corrupt, encrypted, a link, a bad
    or clashing name, past a cap) gets the reason as its problem, and nothing of it stays
    in ``scratch``.
    """
    try:
        zf, bad_names = _open_zip(archive)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise HarnessError(f"{archive}: cannot open the zip: {exc}") from None
    if (scratch / _MARKER).is_file():
        _remove(scratch)  # an earlier run's unpacking (a resume): unpacked again, from nothing
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / _MARKER).touch()
    with zf:
        members: dict[tuple[str, ...], zipfile.ZipInfo] = {}
        for info in zf.infolist():
            parts = tuple(p for p in info.filename.replace("\\", "/").split("/") if p not in ("", ".", ".."))
            if not info.is_dir() and parts and not any(_IGNORED.match(p) for p in parts):
                members.setdefault(parts, info)
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
        files = set(members)
        caps = _Caps()
        found = []
        for (name, is_folder), parts_list in sorted(groups.items()):
            here = label("/".join(prefix + (name,)))
            stem = name.rsplit(".", 1)[0] or name
            if not is_folder and not name.endswith(_SOURCE_SUFFIXES):
                found.append(CollectedSubmission(stem, None, f"{archive}:{here}", _NOT_PYTHON))
                continue
            origin = f"{archive}:{here}" + ("" if not is_folder else f"/{label(entry)}")
            if (name, not is_folder) in groups:
                found.append(CollectedSubmission(name if is_folder else stem, None, origin,
                                        f"the zip holds both a file and a folder named {label(name)}"))
                continue
            problem = _unpack(zf, [(parts, members[parts]) for parts in sorted(parts_list)], files, prefix,
                              scratch, caps, bad_names)
            if problem:
                _remove(scratch / name)
                found.append(CollectedSubmission(name if is_folder else stem, None, origin, problem))
            elif not is_folder:
                found.append(CollectedSubmission(stem, scratch / name, origin))
            elif not (scratch / name / entry).is_file():
                found.append(CollectedSubmission(name, None, origin, _no_entry(entry, scratch / name)))
            else:
                found.append(CollectedSubmission(name, scratch / name / entry, origin))
    return found


def _unpack(zf: zipfile.ZipFile, members: list[tuple[tuple[str, ...], zipfile.ZipInfo]], files: set[tuple[str, ...]],
            prefix: tuple[str, ...], scratch: Path, caps: _Caps, bad_names: set[str]) -> str:
    """Unpack one submission's members; the first reason one cannot be, or "" when all were."""
    if len(members) > SUBMISSION_MEMBERS:
        return f"the zip holds {len(members):,} files for this submission (at most {SUBMISSION_MEMBERS:,})"
    if len(members) > caps.members:
        return f"not unpacked: the zip holds more than {ARCHIVE_MEMBERS:,} files in all"
    caps.members -= len(members)
    budget = SUBMISSION_BYTES
    for parts, info in members:
        where = label("/".join(parts))
        if any(len(p) > NAME_CHARS for p in parts) or any(parts[:i] in files for i in range(1, len(parts))):
            return f"cannot unpack {where} from the zip: its name is too long or clashes with another member's"
        if info.orig_filename in bad_names:
            return f"cannot unpack {where} from the zip: its name is marked UTF-8 but is not"
        if stat.S_ISLNK(info.external_attr >> 16):
            return f"cannot unpack {where} from the zip: it is a symbolic link, which a batch never follows"
        if info.file_size > MEMBER_BYTES:
            return f"cannot read {where} from the zip: larger than {_size(MEMBER_BYTES)}"
        target = scratch.joinpath(*parts[len(prefix):])
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            return f"cannot unpack {where} from the zip: {exc.strerror}"
        with os.fdopen(fd, "wb") as out:
            try:
                with zf.open(info) as f:
                    written = 0
                    while chunk := f.read(1 << 16):
                        written += len(chunk)
                        if written > MEMBER_BYTES:
                            return f"cannot read {where} from the zip: larger than {_size(MEMBER_BYTES)}"
                        if written > budget:
                            return (f"cannot unpack {where} from the zip: the submission unpacks to more than "
                                    f"{_size(SUBMISSION_BYTES)}")
                        if written > caps.bytes:
                            return f"not unpacked: the zip unpacks to more than {_size(ARCHIVE_BYTES)} in all"
                        out.write(chunk)
            except Exception as exc:  # corrupt, bad CRC, encrypted, unknown compression: this row's problem
                return f"cannot read {where} from the zip: {label(str(exc))}"
        budget -= written
        caps.bytes -= written
    return ""


def _remove(path: Path) -> None:
    """Take away what a refused submission had unpacked (never following a link out of the scratch folder)."""
    try:
        info = path.lstat()
    except OSError:  # never made (a name too long, a clash): nothing to take away
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


class _Names(io.RawIOBase):
    """A zip file seen with its central directory's bad "UTF-8" flags cleared.

    ``zipfile`` refuses a whole archive when one member's name is flagged UTF-8 but is
    not; with the flag cleared that name reads as cp437, and the member is marked so
    that its own submission (and only that one) is refused.
    """

    def __init__(self, raw: io.BufferedReader, start: int, directory: bytes) -> None:
        self.raw, self.start, self.directory = raw, start, directory

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def read(self, size: int = -1) -> bytes:
        at = self.raw.tell()
        data = self.raw.read(size)
        lo, hi = max(at, self.start), min(at + len(data), self.start + len(self.directory))
        if lo < hi:
            data = data[:lo - at] + self.directory[lo - self.start:hi - self.start] + data[hi - at:]
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


def _open_zip(archive: Path) -> tuple[zipfile.ZipFile, set[str]]:
    """The open archive, and the names of its members flagged UTF-8 that are not (read as cp437)."""
    try:
        return zipfile.ZipFile(archive), set()
    except UnicodeDecodeError:
        pass
    raw = open(archive, "rb")
    try:
        end = zipfile._EndRecData(raw)  # the same end record zipfile reads
        if end is None:
            raise zipfile.BadZipFile("no end of central directory")
        size, offset = end[zipfile._ECD_SIZE], end[zipfile._ECD_OFFSET]
        start = offset + (end[zipfile._ECD_LOCATION] - size - offset)  # past data prepended to the archive
        raw.seek(start)
        directory = bytearray(raw.read(size))
        bad = set()
        i = 0
        while i + 46 <= len(directory) and directory[i:i + 4] == b"PK\x01\x02":
            flags, name_len, extra_len, comment_len = struct.unpack_from("<H", directory, i + 8)[0], \
                *struct.unpack_from("<HHH", directory, i + 28)
            name = bytes(directory[i + 46:i + 46 + name_len])
            if flags & 0x800:
                try:
                    name.decode("utf-8")
                except UnicodeDecodeError:
                    struct.pack_into("<H", directory, i + 8, flags & ~0x800)
                    bad.add(name.decode("cp437"))
            i += 46 + name_len + extra_len + comment_len
        zf = zipfile.ZipFile(io.BufferedReader(_Names(raw, start, bytes(directory))))
    except BaseException:
        raw.close()
        raise
    return zf, bad


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 else f"{n // 2**10} KiB"


def _unique_ids(found: list[CollectedSubmission]) -> list[CollectedSubmission]:
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
        out.append(CollectedSubmission(sid, s.path, s.origin, s.problem))
    return out
