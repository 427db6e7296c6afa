"""Framing for the channels between the grader and its sandboxed processes.

A message is a 4-byte length, then JSON. Only plain data crosses the
boundary (never pickle: the grader must not run anything a submission could
have crafted); file descriptors ride along as SCM_RIGHTS where a channel
hands out new ones. Everything the grader receives is treated as hostile:
the size, the number of containers and the nesting are bounded before and
while parsing, a slow sender cannot stretch a deadline, and every way the
bytes can be malformed is a ``ChannelError``, never a crash. Standard library
only, so the grader can use it before torch is imported.
"""

from __future__ import annotations

import array
import json
import socket
import struct
import time
from typing import Any, Final, Sequence

__all__ = ["ChannelError", "send_message", "recv_message", "parse", "MAX_MESSAGE", "TRUSTED_LIMITS"]

_HEADER: Final = struct.Struct(">I")
_CREDENTIALS: Final = struct.Struct("3i")  # struct ucred: pid, uid, gid
MAX_MESSAGE: Final = 8 * 1024 * 1024
"""Bytes in one message. A reply holds a few tensors of at most a few thousand numbers."""
MAX_CONTAINERS: Final = 20_000
"""JSON arrays and objects in one message: each tensor is one object and one flat list."""
MAX_FDS: Final = 4
TRUSTED_LIMITS: Final = {"limit": 512 * 1024 * 1024, "containers": 50_000_000}
"""What the sandboxed side accepts from the grader: requests only the grader can send."""


class ChannelError(Exception):
    """The other side sent something that is not a well-formed message."""


def send_message(sock: socket.socket, payload: Any, fds: Sequence[int] = ()) -> None:
    data = json.dumps(payload, allow_nan=True).encode()
    frame = _HEADER.pack(len(data)) + data
    if not fds:
        sock.sendall(frame)
        return
    sent = socket.send_fds(sock, [frame], list(fds))
    if sent < len(frame):
        sock.sendall(frame[sent:])


def recv_message(sock: socket.socket, *, deadline: float | None = None, limit: int = MAX_MESSAGE,
                 containers: int = MAX_CONTAINERS, fds: list[int] | None = None,
                 senders: list[int] | None = None) -> Any:
    """The next message, or None when the other side has closed the channel.

    ``deadline`` (a ``time.monotonic()`` value) bounds the whole message, however
    slowly it trickles in: past it, ``socket.timeout`` is raised. File descriptors
    sent with the message are appended to ``fds`` (refused when ``fds`` is None).
    ``limit`` and ``containers`` bound what is accepted; the sandboxed side raises them
    for the grader's own requests, which can describe graphs of many thousand nodes.
    With ``senders``, the socket must have SO_PASSCRED set: the pid of the process that
    sent the message, as the kernel counts it in this process's pid namespace, is appended.
    """
    header = _recv_exact(sock, _HEADER.size, deadline, fds, senders)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > limit:
        raise ChannelError(f"a message of {size} bytes is larger than the limit of {limit}")
    body = _recv_exact(sock, size, deadline, None, None)
    if body is None:
        return None
    return parse(body, containers)


def parse(body: bytes, containers: int = MAX_CONTAINERS) -> Any:
    """JSON from an untrusted peer, bounded in containers and nesting."""
    # Every array or object costs the parser memory and stack: count them before
    # parsing (brackets inside strings are counted too, which only errs on the safe side).
    if body.count(b"[") + body.count(b"{") > containers:
        raise ChannelError(f"a message with more than {containers} arrays and objects")
    try:
        return json.loads(body)
    except RecursionError:
        raise ChannelError("a message nested too deeply") from None
    except MemoryError:
        raise ChannelError("a message too large to parse") from None
    except ValueError as exc:  # bad UTF-8, bad JSON, an integer with too many digits
        raise ChannelError(f"malformed message: {str(exc)[:200]}") from None


def _recv_exact(sock: socket.socket, size: int, deadline: float | None, fds: list[int] | None,
                senders: list[int] | None = None) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("the deadline passed while receiving a message")
            sock.settimeout(left)
        want = min(remaining, 1 << 20)
        if fds is None and senders is None:
            chunk = sock.recv(want)
        else:
            room = socket.CMSG_SPACE(MAX_FDS * 4) + socket.CMSG_SPACE(_CREDENTIALS.size)
            chunk, ancillary, _flags, _addr = sock.recvmsg(want, room)
            _collect_fds(ancillary, fds if fds is not None else [])
            if senders is not None:
                senders += [_CREDENTIALS.unpack(data[:_CREDENTIALS.size])[0] for level, kind, data in ancillary
                            if level == socket.SOL_SOCKET and kind == getattr(socket, "SCM_CREDENTIALS", None)
                            and len(data) >= _CREDENTIALS.size]
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _collect_fds(ancillary: list[tuple[int, int, bytes]], fds: list[int]) -> None:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            received = array.array("i")
            received.frombytes(data[: len(data) - len(data) % received.itemsize])
            fds.extend(received)
