"""A decoder for the pgoutput logical replication protocol (proto versions 1 and 2).

Hand-written: the PyPI decoders are prototypes (text tuples only, xid read as int64,
names decoded byte by byte) or Rust extensions for newer Pythons; the format is small
and documented in PostgreSQL's "Logical Replication Message Formats".
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_U64 = struct.Struct(">Q")


class PgOutputError(Exception):
    """A message that does not follow the pgoutput format."""


def pg_timestamp(micros: int) -> datetime:
    """Microseconds since 2000-01-01 (the protocol's epoch) as an aware UTC datetime."""
    return PG_EPOCH + timedelta(microseconds=micros)


@dataclass(frozen=True)
class Column:
    name: str
    type_oid: int
    type_modifier: int
    part_of_key: bool


@dataclass(slots=True)
class Begin:
    final_lsn: int
    commit_ts: int  # microseconds since 2000-01-01
    xid: int


@dataclass(slots=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts: int


@dataclass(frozen=True)
class Origin:
    commit_lsn: int
    name: str


@dataclass(frozen=True)
class Relation:
    relation_id: int
    namespace: str
    name: str
    replica_identity: str  # 'd' default, 'n' nothing, 'f' full, 'i' index
    columns: tuple[Column, ...]
    xid: int | None = None


@dataclass(frozen=True)
class TypeMessage:
    type_oid: int
    namespace: str
    name: str
    xid: int | None = None


UNCHANGED_TOAST = object()
"""Marks a TOASTed column that did not change and whose value was not sent ('u')."""


@dataclass(slots=True)
class TupleData:
    """Column values in relation order: None (null), UNCHANGED_TOAST, str (text) or bytes (binary)."""

    values: tuple[object, ...]


@dataclass(slots=True)
class Insert:
    relation_id: int
    new: TupleData
    xid: int | None = None


@dataclass(slots=True)
class Update:
    relation_id: int
    new: TupleData
    old: TupleData | None = None  # 'O' (REPLICA IDENTITY FULL) or 'K' (key columns only)
    old_is_key: bool = False
    xid: int | None = None


@dataclass(slots=True)
class Delete:
    relation_id: int
    old: TupleData
    old_is_key: bool
    xid: int | None = None


@dataclass(frozen=True)
class Truncate:
    relation_ids: tuple[int, ...]
    cascade: bool
    restart_identity: bool
    xid: int | None = None


@dataclass(frozen=True)
class Message:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes
    xid: int | None = None


@dataclass(frozen=True)
class StreamStart:
    xid: int
    first_segment: bool


@dataclass(frozen=True)
class StreamStop:
    pass


@dataclass(frozen=True)
class StreamCommit:
    xid: int
    flags: int
    commit_lsn: int
    end_lsn: int
    commit_ts: int


@dataclass(frozen=True)
class StreamAbort:
    xid: int
    sub_xid: int


PgOutputMessage = (
    Begin
    | Commit
    | Origin
    | Relation
    | TypeMessage
    | Insert
    | Update
    | Delete
    | Truncate
    | Message
    | StreamStart
    | StreamStop
    | StreamCommit
    | StreamAbort
)


@dataclass
class _Reader:
    data: bytes
    pos: int = 0
    in_stream: bool = field(default=False)

    def take(self, s: struct.Struct) -> int:
        if self.pos + s.size > len(self.data):
            raise PgOutputError(f"message truncated at byte {self.pos} (needs {s.size} more bytes)")
        (v,) = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return v

    def byte(self) -> str:
        if self.pos >= len(self.data):
            raise PgOutputError(f"message truncated at byte {self.pos}")
        c = chr(self.data[self.pos])
        self.pos += 1
        return c

    def string(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise PgOutputError(f"unterminated string at byte {self.pos}")
        s = self.data[self.pos : end].decode("utf-8")
        self.pos = end + 1
        return s

    def raw(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise PgOutputError(f"value of {n} bytes truncated at byte {self.pos}")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def xid(self) -> int | None:
        # Inside a streamed transaction (proto 2) DML messages carry the xid first.
        return self.take(_U32) if self.in_stream else None


_unpack_i16 = _I16.unpack_from
_unpack_i32 = _I32.unpack_from
_unpack_u32 = _U32.unpack_from


def _values(data: bytes, pos: int) -> tuple[tuple[object, ...], int]:
    """The column values of the TupleData at `pos` and the position after it: the per-row hot path, kept flat.

    A value running past the end of the message is caught once, after the loop: positions only grow,
    so a truncated value leaves `pos` past the end (a slice past the end is merely short).
    """
    (n,) = _unpack_i16(data, pos)
    pos += 2
    values: list[object] = []
    append = values.append
    unpack = _unpack_i32
    for _ in range(n):
        kind = data[pos]
        if kind == 116:  # 't': text
            start = pos + 5
            pos = start + unpack(data, pos + 1)[0]
            try:
                append(data[start:pos].decode("utf-8"))
            except UnicodeDecodeError:
                if pos > len(data):  # cut inside a character: the message is short, not the text wrong
                    raise PgOutputError(f"value truncated at byte {start}") from None
                raise
        elif kind == 110:  # 'n': null
            pos += 1
            append(None)
        elif kind == 117:  # 'u': unchanged TOAST
            pos += 1
            append(UNCHANGED_TOAST)
        elif kind == 98:  # 'b': binary
            start = pos + 5
            pos = start + unpack(data, pos + 1)[0]
            append(data[start:pos])
        else:
            raise PgOutputError(f"unknown tuple column kind {chr(kind)!r} at byte {pos}")
    if pos > len(data):
        raise PgOutputError(f"value truncated: the tuple needs {pos} bytes, the message has {len(data)}")
    return tuple(values), pos


def _tuple(data: bytes, pos: int) -> tuple[TupleData, int]:
    """The TupleData at `pos` and the position after it."""
    values, pos = _values(data, pos)
    return TupleData(values), pos


def insert_values(data: bytes) -> tuple[int, tuple[object, ...]]:
    """An Insert outside a streamed transaction as (relation id, new row values), without message objects.

    The streaming loop's path for the most frequent message; `PgOutputDecoder.decode` gives the same
    values as `Insert.new.values`.
    """
    try:
        if data[5] != 78:  # 'N'
            raise PgOutputError("Insert without a new tuple ('N')")
        return _unpack_u32(data, 1)[0], _values(data, 6)[0]
    except (struct.error, IndexError):
        raise PgOutputError(f"message {data[:1]!r} truncated ({len(data)} bytes)") from None


class PgOutputDecoder:
    """Stateful only for streamed transactions (between Stream Start and Stream Stop)."""

    def __init__(self, in_stream: bool = False) -> None:
        self._in_stream = in_stream  # True to decode messages kept from inside a stream

    def decode(self, data: bytes) -> PgOutputMessage:
        if type(data) is not bytes:
            data = bytes(data)
        try:
            return self._decode(data)
        except (struct.error, IndexError):
            raise PgOutputError(f"message {data[:1]!r} truncated ({len(data)} bytes)") from None

    def _dml(self, data: bytes, kind: int) -> Insert | Update | Delete:
        """Insert, Update and Delete without the generic reader: one call per row."""
        pos = 1
        xid = None
        if self._in_stream:
            (xid,) = _unpack_u32(data, 1)
            pos = 5
        (rel,) = _unpack_u32(data, pos)
        marker = data[pos + 4]
        pos += 5
        if kind == 73:  # 'I'
            if marker != 78:
                raise PgOutputError("Insert without a new tuple ('N')")
            return Insert(rel, _tuple(data, pos)[0], xid)
        if kind == 85:  # 'U'
            old = None
            old_is_key = marker == 75
            if marker == 75 or marker == 79:  # 'K' (key columns) or 'O' (old row)
                old, pos = _tuple(data, pos)
                marker = data[pos]
                pos += 1
            if marker != 78:
                raise PgOutputError(f"Update without a new tuple (found {chr(marker)!r})")
            return Update(rel, _tuple(data, pos)[0], old, old_is_key, xid)
        if marker != 75 and marker != 79:
            raise PgOutputError(f"Delete without an old tuple (found {chr(marker)!r})")
        return Delete(rel, _tuple(data, pos)[0], marker == 75, xid)

    def _decode(self, data: bytes) -> PgOutputMessage:
        first = data[0]
        if first == 73 or first == 85 or first == 68:  # 'I', 'U', 'D'
            return self._dml(data, first)
        r = _Reader(data, 0, self._in_stream)
        kind = r.byte()
        match kind:
            case "B":
                return Begin(r.take(_U64), r.take(_I64), r.take(_U32))
            case "C":
                return Commit(r.take(_I8), r.take(_U64), r.take(_U64), r.take(_I64))
            case "O":
                return Origin(r.take(_U64), r.string())
            case "R":
                xid = r.xid()
                rel_id, ns, name = r.take(_U32), r.string(), r.string()
                ident = r.byte()
                cols = []
                for _ in range(r.take(_I16)):
                    flags = r.take(_I8)
                    cols.append(Column(r.string(), r.take(_U32), r.take(_I32), bool(flags & 1)))
                return Relation(rel_id, ns or "pg_catalog", name, ident, tuple(cols), xid)
            case "Y":
                xid = r.xid()
                return TypeMessage(r.take(_U32), r.string(), r.string(), xid)
            case "T":
                xid = r.xid()
                n = r.take(_I32)
                opts = r.take(_I8)
                rels = tuple(r.take(_U32) for _ in range(n))
                return Truncate(rels, bool(opts & 1), bool(opts & 2), xid)
            case "M":
                xid = r.xid()
                flags = r.take(_I8)
                lsn = r.take(_U64)
                prefix = r.string()
                content = r.raw(r.take(_I32))
                return Message(bool(flags & 1), lsn, prefix, content, xid)
            case "S":
                self._in_stream = True
                return StreamStart(r.take(_U32), r.take(_I8) == 1)
            case "E":
                self._in_stream = False
                return StreamStop()
            case "c":
                return StreamCommit(r.take(_U32), r.take(_I8), r.take(_U64), r.take(_U64), r.take(_I64))
            case "A":
                return StreamAbort(r.take(_U32), r.take(_U32))
        raise PgOutputError(
            f"unsupported pgoutput message {kind!r}; only proto_version 1 and 2 messages are decoded "
            "(two-phase commit, proto 3, is not enabled by this connector)"
        )
