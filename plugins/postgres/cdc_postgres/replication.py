"""Push streaming over PostgreSQL's replication protocol with psycopg 3's low-level `pq` API.

psycopg 3 has no replication support beyond letting START_REPLICATION enter COPY BOTH
(psycopg#71, PR #1219), so the CopyData framing is handled here: XLogData ('w'),
primary keepalives ('k') and standby status updates ('r'). Push streaming avoids the
polling functions' re-decoding and server-side materialization (see the reference notes).

The flushed position reported to the server is only what the caller confirms with
`confirm()`: the slot must not release WAL that the offset store does not yet cover.
"""

from __future__ import annotations

import select
import struct
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import pq

from cdc_postgres import tls
from cdc_postgres.lsn import format_lsn

PG_EPOCH_UNIX = 946_684_800  # 2000-01-01 in Unix seconds

_XLOG = struct.Struct(">cQQq")
_KEEPALIVE = struct.Struct(">cQqB")
_STATUS = struct.Struct(">cQQQqB")


class ReplicationError(Exception):
    """The replication connection failed; the message says what to check."""


@dataclass(frozen=True)
class SlotInfo:
    name: str
    consistent_point: int
    snapshot_name: str | None
    output_plugin: str


@dataclass(slots=True)
class XLogData:
    data_start: int
    wal_end: int
    send_time: int
    payload: bytes


def _now_pg_micros() -> int:
    return int((time.time() - PG_EPOCH_UNIX) * 1_000_000)


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class ReplicationConnection:
    """One `replication=database` connection: slot commands and one logical stream."""

    def __init__(self, dsn: str | dict[str, Any], connect_timeout: float = 30.0) -> None:
        conninfo, kw = (dsn, {}) if isinstance(dsn, str) else ("", dict(dsn))
        try:
            self._conn = psycopg.connect(
                conninfo, replication="database", autocommit=True, connect_timeout=int(connect_timeout), **kw
            )
        except psycopg.OperationalError as e:
            fix = tls.advice(str(e)) or (
                "the user needs the REPLICATION attribute (ALTER ROLE … REPLICATION) and pg_hba.conf must allow it"
            )
            raise ReplicationError(f"cannot open a replication connection: {tls.first_line(e)}; {fix}") from e
        self._pq: pq.abc.PGconn = self._conn.pgconn
        self._streaming = False
        self.confirmed_lsn = 0
        self.received_lsn = 0

    # -- slots -------------------------------------------------------------------------------
    def create_slot(
        self, name: str, plugin: str = "pgoutput", export_snapshot: bool = True, temporary: bool = False
    ) -> SlotInfo:
        """Create a logical slot; with `export_snapshot` its snapshot can seed a consistent copy.

        The exported snapshot stays valid only while this connection runs no other command,
        so read it (SET TRANSACTION SNAPSHOT) before calling `start`. A `temporary` slot is
        dropped by the server when this connection ends (a resumed snapshot's new point P2).
        """
        option = "(SNAPSHOT 'export')" if export_snapshot else "(SNAPSHOT 'nothing')"
        kind = "TEMPORARY LOGICAL" if temporary else "LOGICAL"
        try:
            row = self._conn.execute(
                f"CREATE_REPLICATION_SLOT {_quote_ident(name)} {kind} {plugin} {option}"
            ).fetchone()
        except psycopg.Error as e:
            raise ReplicationError(f"cannot create replication slot {name!r}: {str(e).strip()}") from e
        assert row is not None
        from cdc_postgres.lsn import parse_lsn

        return SlotInfo(row[0], parse_lsn(row[1]), row[2], row[3])

    def drop_slot(self, name: str) -> None:
        self._conn.execute(f"DROP_REPLICATION_SLOT {_quote_ident(name)} WAIT")

    # -- streaming ---------------------------------------------------------------------------
    def start(
        self,
        slot: str,
        publications: list[str],
        start_lsn: int = 0,
        proto_version: int = 1,
        messages: bool = True,
        streaming: bool = False,
    ) -> None:
        """Start streaming from max(start_lsn, the slot's confirmed_flush_lsn).

        `streaming` (proto 2) lets the server send large transactions before they commit.
        Starting confirms nothing: `start_lsn` may be a position whose records are not stored
        yet (a reconnect resumes after the last *emitted* event), so the flushed position
        reported to the server stays what `confirm()` was given.
        """
        options = [
            f"proto_version {_quote_literal(str(proto_version))}",
            f"publication_names {_quote_literal(','.join(_quote_ident(p) for p in publications))}",
            f"messages {_quote_literal('true' if messages else 'false')}",
        ]
        if streaming:
            options.append("streaming 'on'")  # PostgreSQL 14+ (the task checks the version at start)
        command = f"START_REPLICATION SLOT {_quote_ident(slot)} LOGICAL {format_lsn(start_lsn)} ({', '.join(options)})"
        try:
            self._conn.execute(command)
        except psycopg.Error as e:
            raise ReplicationError(f"cannot start replication from slot {slot!r}: {str(e).strip()}") from e
        self._streaming = True

    def read(self, timeout: float = 1.0) -> XLogData | None:
        """The next XLogData, or None after `timeout` seconds without one.

        Keepalives are answered here (with the confirmed position only).
        """
        batch = self.read_batch(timeout, 1)
        if not batch:
            return None
        start, end, sent, payload = batch[0]
        return XLogData(start, end, sent, payload)

    def read_batch(self, timeout: float = 1.0, limit: int = 1024) -> list[tuple[int, int, int, bytes]]:
        """Up to `limit` XLogData as (data_start, wal_end, send_time, payload): those already received,
        waiting up to `timeout` seconds for the first. Empty after `timeout` seconds without one.

        The streaming loop's read: one call per batch, not per message, and no object per message
        beyond its payload. Keepalives are answered here (with the confirmed position only).
        """
        out: list[tuple[int, int, int, bytes]] = []
        append = out.append
        get = self._pq.get_copy_data
        unpack = _XLOG.unpack_from
        header = _XLOG.size
        deadline = 0.0
        received = self.received_lsn
        try:
            while len(out) < limit:
                nbytes, data = get(1)
                if nbytes == 0:
                    if out:
                        # What the socket holds now, without waiting: a batch ends where the data does.
                        self._pq.consume_input()
                        nbytes, data = get(1)
                        if nbytes == 0:
                            break
                    else:
                        now = time.monotonic()
                        if not deadline:
                            deadline = now + timeout
                        remaining = deadline - now
                        if remaining <= 0:
                            break
                        select.select([self._pq.socket], [], [], remaining)
                        self._pq.consume_input()
                        continue
                if nbytes < 0:
                    raise ReplicationError(self._end_message())
                kind = data[0]
                if kind == 119:  # 'w'
                    _, start, end, sent = unpack(data)
                    if end > received:
                        received = end
                    append((start, end, sent, bytes(data[header:])))
                elif kind == 107:  # 'k'
                    _, wal_end, _sent, reply = _KEEPALIVE.unpack_from(data)
                    if wal_end > received:
                        received = wal_end
                    if reply:
                        self.received_lsn = received
                        self.send_status()
                else:
                    raise ReplicationError(f"unexpected CopyData message {bytes(data[:1])!r} on the replication stream")
        finally:
            self.received_lsn = received
        return out

    def confirm(self, lsn: int) -> None:
        """Report `lsn` as flushed: the server may now recycle WAL before it."""
        if lsn > self.confirmed_lsn:
            self.confirmed_lsn = lsn
        self.send_status()

    def send_status(self, reply_requested: bool = False) -> None:
        # A flush position of 0 (nothing confirmed on this connection yet) is ignored by the server.
        msg = _STATUS.pack(
            b"r", self.received_lsn, self.confirmed_lsn, self.confirmed_lsn, _now_pg_micros(), int(reply_requested)
        )
        if self._pq.put_copy_data(msg) != 1 or self._pq.flush() != 0:
            raise ReplicationError("cannot send the standby status update; the connection is broken")

    def _end_message(self) -> str:
        result: Any = self._pq.get_result()
        detail = ""
        if result is not None and result.error_message:
            detail = result.error_message.decode(errors="replace").strip()
        return f"the replication stream ended{': ' + detail if detail else ''}"

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ReplicationConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
