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


@dataclass(frozen=True)
class Begin:
    final_lsn: int
    commit_ts: int  # microseconds since 2000-01-01
    xid: int


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class TupleData:
    """Column values in relation order: None (null), UNCHANGED_TOAST, str (text) or bytes (binary)."""

    values: tuple[object, ...]


@dataclass(frozen=True)
class Insert:
    relation_id: int
    new: TupleData
    xid: int | None = None


@dataclass(frozen=True)
class Update:
    relation_id: int
    new: TupleData
    old: TupleData | None = None  # 'O' (REPLICA IDENTITY FULL) or 'K' (key columns only)
    old_is_key: bool = False
    xid: int | None = None


@dataclass(frozen=True)
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

    def tuple_data(self) -> TupleData:
        n = self.take(_I16)
        values: list[object] = []
        for _ in range(n):
            kind = self.byte()
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED_TOAST)
            elif kind == "t":
                values.append(self.raw(self.take(_I32)).decode("utf-8"))
            elif kind == "b":
                values.append(self.raw(self.take(_I32)))
            else:
                raise PgOutputError(f"unknown tuple column kind {kind!r} at byte {self.pos - 1}")
        return TupleData(tuple(values))


class PgOutputDecoder:
    """Stateful only for streamed transactions (between Stream Start and Stream Stop)."""

    def __init__(self) -> None:
        self._in_stream = False

    def decode(self, data: bytes) -> PgOutputMessage:
        r = _Reader(bytes(data), 0, self._in_stream)
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
            case "I":
                xid = r.xid()
                rel = r.take(_U32)
                if r.byte() != "N":
                    raise PgOutputError("Insert without a new tuple ('N')")
                return Insert(rel, r.tuple_data(), xid)
            case "U":
                xid = r.xid()
                rel = r.take(_U32)
                marker = r.byte()
                old = None
                old_is_key = False
                if marker in ("K", "O"):
                    old_is_key = marker == "K"
                    old = r.tuple_data()
                    marker = r.byte()
                if marker != "N":
                    raise PgOutputError(f"Update without a new tuple (found {marker!r})")
                return Update(rel, r.tuple_data(), old, old_is_key, xid)
            case "D":
                xid = r.xid()
                rel = r.take(_U32)
                marker = r.byte()
                if marker not in ("K", "O"):
                    raise PgOutputError(f"Delete without an old tuple (found {marker!r})")
                return Delete(rel, r.tuple_data(), marker == "K", xid)
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
