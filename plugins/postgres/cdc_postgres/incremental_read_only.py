"""`pg_current_snapshot()` watermarks for `read.only=true` incremental snapshots on PostgreSQL.

Debezium's PostgresReadOnlyIncrementalSnapshotChangeEventSource / PostgresReadOnlyIncrementalSnapshotContext:
instead of inserting watermark rows into the signal table, the chunk's low watermark is
`pg_current_snapshot()` (`xmin:xmax:xip,...`) read before the chunk SELECT and the high watermark the one
read after it. Nothing is written to the database.

The window over the WAL stream (transactions arrive in commit order), checked on every streamed row of a
captured table, by its transaction id:

- it opens at the first transaction still running at the low watermark (`xid >= xmax`, or listed in
  `xip`). Every transaction the chunk SELECT could not see was running when the low snapshot was taken,
  so it opens the window before its changes reach the chunk's keys. Debezium opens at `xid >= xmin`,
  which is the same test without the `xip` list (a little earlier; both are safe);
- it closes before the first transaction still running at the high watermark: it committed after the
  SELECT, and so does everything streamed after it. Debezium closes at `xid > max(xmax of both)`,
  which waits past the transactions listed in `xip`;
- when no such row comes (an idle database, writes to other tables), it closes once the stream has passed
  the WAL write position read with the high watermark (`pg_current_wal_lsn()`; the walsender's sent
  position from its keepalives, or a later commit): every transaction committed before the SELECT ended
  has then been streamed. With synchronous_commit=off one may still follow the rows: it re-applies a
  value no newer than theirs, and the stream's later changes bring the key to the rows' value or beyond.
  The write position, not the insert one: an insert position at a page start points past the page
  header, where no record ends. The rows of a window closed this way carry no commit LSN, so they rank
  (L, 0) at the stream's position L (cdc_spark/decode/sequence.py): a transaction whose changes the
  stream read before L (their WAL flushed by another commit) may have its commit record start exactly at
  L, and its changes, at LSNs below L, must still outrank the rows. Debezium's counterpart compares
  heartbeat transaction ids with the high watermark's xmin, which needs transactions to happen;
  `heartbeat.interval.ms` brings keepalives sooner.

pgoutput sends 32-bit transaction ids and `pg_current_snapshot()` 64-bit ones (epoch << 32 | xid):
both are compared as 32-bit ids with PostgreSQL's own wraparound rule (TransactionIdPrecedes).
Hand-written: psycopg has no type for pg_snapshot, and it is three integers.
"""

from __future__ import annotations

from dataclasses import dataclass

READ_ONLY = "read.only"
_MASK = 0xFFFFFFFF

# The snapshot and the WAL position every transaction the SELECT could see has committed before.
WATERMARK_QUERY = (
    "SELECT pg_current_snapshot()::text, (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() "
    "ELSE pg_current_wal_lsn() END) - '0/0'::pg_lsn"
)


def precedes(a: int, b: int) -> bool:
    """PostgreSQL's TransactionIdPrecedes on 32-bit ids: `a` is older than `b`, modulo 2^32."""
    return ((a - b) & _MASK) >= 0x80000000


@dataclass(frozen=True)
class PgSnapshot:
    """`xmin:xmax:xip1,xip2,...` (Debezium's PgSnapshot), kept as 32-bit ids."""

    xmin: int
    xmax: int
    xip: frozenset[int]

    @classmethod
    def parse(cls, text: str) -> PgSnapshot:
        xmin, xmax, xip = text.strip().split(":")
        return cls(int(xmin) & _MASK, int(xmax) & _MASK, frozenset(int(x) & _MASK for x in xip.split(",") if x))

    def running(self, xid: int) -> bool:
        """Was transaction `xid` still running (or not started) when this snapshot was taken?"""
        xid &= _MASK
        if precedes(xid, self.xmin):
            return False
        return not precedes(xid, self.xmax) or xid in self.xip


@dataclass
class XidWindow:
    """One chunk's watermarks: the low snapshot, then (after the SELECT) the high one and its WAL position."""

    chunk_id: str
    low: PgSnapshot
    high: PgSnapshot | None = None
    high_lsn: int | None = None

    def opens(self, xid: int) -> bool:
        return self.low.running(xid)

    def closes(self, xid: int) -> bool:
        return self.high is not None and self.high.running(xid)

    def reached(self, streamed_lsn: int) -> bool:
        return self.high_lsn is not None and streamed_lsn >= self.high_lsn
