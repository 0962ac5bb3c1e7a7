"""Compact binary encoding of record headers for the embedded log.

Hand-written because the only alternatives are JSON (bytes need base64) or pickle (not
safe to read from a shared file); the format is: per header, u16 key length, UTF-8 key,
i32 value length (-1 for null), value bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

_KEY = struct.Struct(">H")
_VAL = struct.Struct(">i")


def encode_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes | None:
    if not headers:
        return None
    out = bytearray()
    for key, value in headers:
        kb = key.encode()
        out += _KEY.pack(len(kb)) + kb
        if value is None:
            out += _VAL.pack(-1)
        else:
            out += _VAL.pack(len(value)) + value
    return bytes(out)


def decode_headers(data: bytes | None) -> tuple[tuple[str, bytes | None], ...]:
    if not data:
        return ()
    items: list[tuple[str, bytes | None]] = []
    i = 0
    while i < len(data):
        (klen,) = _KEY.unpack_from(data, i)
        i += 2
        key = data[i : i + klen].decode()
        i += klen
        (vlen,) = _VAL.unpack_from(data, i)
        i += 4
        if vlen < 0:
            items.append((key, None))
        else:
            items.append((key, bytes(data[i : i + vlen])))
            i += vlen
    return tuple(items)
