"""Framing for the grader <-> worker channel: a 4-byte length, then JSON.

Only plain data crosses the boundary (never pickle: the parent must not run
anything a submission could have crafted). Standard library only, so the
parent can use it before torch is imported.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

_HEADER = struct.Struct(">I")
MAX_MESSAGE = 256 * 1024 * 1024


class ChannelError(Exception):
    """The other side sent something that is not a well-formed message."""


def send_message(sock: socket.socket, payload: Any) -> None:
    data = json.dumps(payload, allow_nan=True).encode()
    sock.sendall(_HEADER.pack(len(data)) + data)


def recv_message(sock: socket.socket) -> Any:
    """The next message, or None when the other side has closed the channel."""
    header = _recv_exact(sock, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_MESSAGE:
        raise ChannelError(f"a message of {size} bytes is larger than the limit")
    body = _recv_exact(sock, size)
    if body is None:
        return None
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ChannelError(f"malformed message: {exc}") from None


def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
