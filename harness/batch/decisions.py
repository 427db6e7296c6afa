"""``OUTDIR/decisions.json``: the decisions people made about a batch's candidates, read and written.

The file is an interviewer's input, and as hostile as any other batch input: it is read only when it
is a regular file (never through a link) under ``MAX_BYTES``, parsed as strict JSON, and checked
against its schema (``version``, then per candidate id the fields of ``report.decisions.Decision``,
each of its type and within its bounds). Anything else is a one-line ``HarnessError`` naming the file
and what is wrong, so a batch and ``grade batch decide`` refuse it before touching an export.

``record`` changes one candidate's decision under a lock on the output folder (two interviewers
deciding at once both keep their decision) and writes the file through a rename.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, Iterator, Mapping

from harness.errors import HarnessError
from harness.report.decisions import DECISION_FIELDS, Decision
from harness.report.files import write_atomic
from harness.report.safety import one_line

__all__ = ["FILE", "MAX_BYTES", "load_decisions", "record", "cleared"]

FILE = "decisions.json"
VERSION = 1
MAX_BYTES = 4 * 1024 * 1024
"""The largest decisions file read: a comment per candidate of a cohort of thousands."""
MAX_TEXT = 10_000
"""Characters of a reason or a comment."""
MAX_SHORT = 200
"""Characters of a name, a time or a candidate id."""
MAX_HISTORY = 100
"""Earlier states kept per candidate; the oldest go first."""
_SHA256 = re.compile(r"[0-9a-f]{64}|")
_LOCK = ".decisions.lock"


def load_decisions(outdir: Path) -> dict[str, Decision]:
    """The decisions in ``outdir`` by candidate id ({} without a file). Raises HarnessError for a bad file."""
    path = Path(outdir) / FILE
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise HarnessError(f"{path}: cannot be read: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise HarnessError(f"{path}: not a regular file (a link, a folder or a device is never read)")
    if info.st_size > MAX_BYTES:
        raise HarnessError(f"{path}: {info.st_size:,} bytes, more than the {MAX_BYTES:,} a decisions file may hold")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise HarnessError(f"{path}: cannot be read: {exc.strerror}") from None
    if len(data) > MAX_BYTES:
        raise HarnessError(f"{path}: more than the {MAX_BYTES:,} bytes a decisions file may hold")
    try:
        text = data.decode("utf-8")
        loaded = json.loads(text, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise HarnessError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:
        raise HarnessError(f"{path}: not valid JSON: {one_line(str(exc))[:200]}") from None
    return _decisions(path, loaded)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _decisions(path: Path, loaded: Any) -> dict[str, Decision]:
    def bad(where: str, what: str) -> HarnessError:
        return HarnessError(f"{path}: {where}: {what}")

    if not isinstance(loaded, dict):
        raise bad("the file", f"must be an object {{\"version\": {VERSION}, \"decisions\": {{...}}}}")
    unknown = sorted(set(loaded) - {"version", "decisions"})
    if unknown:
        raise bad(f"key {_shown(unknown[0])}", "unknown; allowed: version, decisions")
    if loaded.get("version") != VERSION:
        raise bad("version", f"must be {VERSION}, got {_shown(loaded.get('version'))}")
    entries = loaded.get("decisions", {})
    if not isinstance(entries, dict):
        raise bad("decisions", "must be an object of candidate id -> decision")
    out = {}
    for sid, entry in entries.items():
        if not sid or len(sid) > MAX_SHORT:
            raise bad(f"decisions[{_shown(sid[:MAX_SHORT])}]", f"a candidate id has 1 to {MAX_SHORT} characters")
        where = f"decisions[{_shown(sid)}]"
        fields = _entry(entry, where, bad, history=True)
        history = entry.get("history", [])
        if not isinstance(history, list) or len(history) > MAX_HISTORY:
            raise bad(f"{where}.history", f"must be a list of at most {MAX_HISTORY} earlier decisions")
        for i, earlier in enumerate(history):
            _entry(earlier, f"{where}.history[{i}]", bad, history=False)
        out[sid] = Decision.from_dict({**fields, "history": history})
    return out


def _entry(entry: Any, where: str, bad, *, history: bool) -> dict[str, Any]:
    """One decision's fields, each checked; raises ``bad(...)`` naming the first that is wrong."""
    if not isinstance(entry, dict):
        raise bad(where, "must be an object")
    allowed = (*DECISION_FIELDS, "history") if history else DECISION_FIELDS
    unknown = sorted(set(entry) - set(allowed))
    if unknown:
        raise bad(f"{where}.{one_line(unknown[0])[:MAX_SHORT]}", f"unknown; allowed: {', '.join(allowed)}")
    missing = [name for name in ("decided_at", "by", "source_sha256", "automatic_score", "max_score")
               if name not in entry]
    if missing:
        raise bad(where, f"{missing[0]} is missing")
    for name in ("decided_at", "by"):
        _text(entry[name], f"{where}.{name}", bad, MAX_SHORT)
    for name in ("because", "comment"):
        if name in entry:
            _text(entry[name], f"{where}.{name}", bad, MAX_TEXT)
    if not isinstance(entry["source_sha256"], str) or not _SHA256.fullmatch(entry["source_sha256"]):
        raise bad(f"{where}.source_sha256", "must be 64 lowercase hexadecimal digits")
    for name in ("automatic_score", "max_score", "score"):
        value = entry.get(name)
        if name == "score" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise bad(f"{where}.{name}", f"must be a number of points (0 or more), got {_shown(value)}")
    if not isinstance(entry.get("accept_review", False), bool):
        raise bad(f"{where}.accept_review", "must be true or false")
    if entry.get("bar") not in (None, True, False):
        raise bad(f"{where}.bar", "must be true, false or null")
    return {name: entry[name] for name in DECISION_FIELDS if name in entry}


def _text(value: Any, where: str, bad, limit: int) -> None:
    if not isinstance(value, str):
        raise bad(where, f"must be text, got {_shown(value)}")
    if len(value) > limit:
        raise bad(where, f"{len(value):,} characters, more than {limit:,}")


def _shown(value: Any) -> str:
    """A value from the file in a one-line message: escaped, and short."""
    text = one_line(json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value))
    return text if len(text) <= 60 else text[:57] + "..."


@contextlib.contextmanager
def _locked(outdir: Path) -> Iterator[None]:
    """The output folder's decisions to oneself: a second ``decide`` waits for the first to finish."""
    fd = os.open(Path(outdir) / _LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def record(outdir: Path, sid: str, change: Mapping[str, Any], *, base: Mapping[str, Any]) -> Decision:
    """Change ``sid``'s decision by ``change`` (the fields given), over ``base`` (``decided_at``, ``by``, and
    the ``source_sha256``, ``automatic_score`` and ``max_score`` of the report decided on), and write the file.

    A decision made for the same source is updated field by field; one made for another source (an older
    version) is started again. Either way the state it replaces joins its history.
    """
    with _locked(outdir):
        decisions = load_decisions(outdir)
        before = decisions.get(sid)
        fields: dict[str, Any] = {}
        history: list[Mapping[str, Any]] = []
        if before is not None:
            history = [*before.history, before.state()][-MAX_HISTORY:]
            if before.source_sha256 == base["source_sha256"]:
                fields = {k: v for k, v in before.state().items() if k in ("score", "because", "comment",
                                                                            "accept_review", "bar")}
        fields.update(change)
        fields.update(base)
        decision = Decision.from_dict({**fields, "history": history})
        decisions[sid] = decision
        _write(outdir, decisions)
        return decision


def cleared() -> dict[str, Any]:
    """The change that takes a decision back (its history stays)."""
    return {"score": None, "because": "", "comment": "", "accept_review": False, "bar": None}


def _write(outdir: Path, decisions: Mapping[str, Decision]) -> None:
    data = {"version": VERSION, "decisions": {sid: d.to_dict() for sid, d in sorted(decisions.items())}}
    write_atomic(Path(outdir) / FILE, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
