"""GTID-set watermarks for `read.only=true` incremental snapshots on MySQL and MariaDB.

Debezium's MySqlReadOnlyIncrementalSnapshotChangeEventSource / MariaDbReadOnlyIncrementalSnapshotContext
(BinlogReadOnlyIncrementalSnapshotChangeEventSource): instead of writing watermark rows to the signal table,
the chunk's low watermark is the server's executed GTID set read before the chunk SELECT (MariaDB:
`@@gtid_binlog_pos`, MySQL: `@@gtid_executed`) and the high watermark is the set read after it. Nothing is
written to the database.

The window over the binlog stream, checked on every streamed change of a captured table:

- it opens at the first transaction whose GTID the low set does not contain. Every transaction the chunk
  SELECT could not see committed after the SELECT began, so after the low set was read: it opens the
  window before its changes reach the chunk's keys. The SELECT runs in `START TRANSACTION WITH CONSISTENT
  SNAPSHOT`, which MariaDB makes consistent with the binlog (every transaction written to it before the
  snapshot is visible), so a transaction in the low set is never one the SELECT missed;
- it closes before the first transaction whose GTID the high set does not contain: everything after it
  committed after the SELECT, so every later change is newer than the chunk's rows (Debezium's
  `updateWindowState`);
- a chunk whose high set shows another server (GtidWindow.server_changed: a failover while it was read)
  is read again, as Debezium's `rereadChunk`;
- when the stream's executed set has reached the high watermark (the GTIDs new since the low one, or the
  low set itself when nothing committed during the chunk) with no change of a captured table to close it
  (an idle database, writes to other tables), the task's poll closes it: Debezium's
  `readUntilGtidChange` on heartbeats and commits, run here on every poll.

Containment is per MariaDB replication domain (sequence numbers grow in binlog order within a domain, and
`@@gtid_binlog_pos` holds the last GTID of each) and per MySQL server UUID (and tag) with its intervals.
Hand-written: python-mysql-replication's GtidSet compares whole entries for equality, not a GTID's
membership in a set (see gtid.py), and has no MariaDB set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc.api import ConnectException

READ_ONLY = "read.only"


def _mariadb(text: str | None) -> tuple[dict[str, list[tuple[int, int]]], dict[str, str]]:
    """`0-1-100,1-2-7`: per domain, the one interval 1..highest sequence (the domain's GTIDs up to it), and
    the server id of the domain's last GTID."""
    out: dict[str, list[tuple[int, int]]] = {}
    servers: dict[str, str] = {}
    for part in (text or "").replace("\n", "").split(","):
        part = part.strip()
        if not part:
            continue
        domain, server, seq = part.split("-")
        highest = out[domain][0][1] if domain in out else 0
        if int(seq) >= highest:
            servers[domain] = server
        out[domain] = [(1, max(int(seq), highest))]
    return out, servers


def _mysql(text: str | None) -> dict[str, list[tuple[int, int]]]:
    """`uuid:1-5:7,uuid2:tag:1-3`: per server UUID (with its tag, if any), the intervals."""
    out: dict[str, list[tuple[int, int]]] = {}
    for part in (text or "").replace("\n", "").split(","):
        part = part.strip()
        if not part:
            continue
        pieces = part.split(":")
        source = pieces[0].lower()
        for piece in pieces[1:]:
            if not piece or not piece[0].isdigit():
                source = f"{pieces[0].lower()}:{piece.lower()}"  # a MySQL 8.4 tag
                continue
            start, _, end = piece.partition("-")
            out.setdefault(source, []).append((int(start), int(end or start)))
    return out


@dataclass(frozen=True)
class GtidSet:
    """An executed GTID set as intervals per source (MariaDB domain, MySQL server UUID[:tag])."""

    intervals: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # MariaDB: the server id of each domain's last GTID (MySQL's sources are the servers themselves)
    servers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str | None, is_mariadb: bool) -> GtidSet:
        if is_mariadb:
            return cls(*_mariadb(text))
        return cls(_mysql(text))

    def top(self, source: str) -> int:
        return max((end for _, end in self.intervals.get(source, ())), default=0)

    def contains(self, source: str, seq: int) -> bool:
        return any(start <= seq <= end for start, end in self.intervals.get(source, ()))

    def newer_than(self, low: GtidSet) -> dict[str, int]:
        """The sources whose highest GTID moved past `low`'s, with the highest (Debezium's high minus low)."""
        return {s: self.top(s) for s in self.intervals if self.top(s) > low.top(s)}


def parse_gtid(gtid: str, is_mariadb: bool) -> tuple[str, int]:
    """One GTID's source and sequence: MariaDB `domain-server-seq`, MySQL `uuid[:tag]:n`."""
    if is_mariadb:
        domain, _server, seq = gtid.strip().split("-")
        return domain, int(seq)
    source, _, seq = gtid.strip().rpartition(":")
    return source.lower(), int(seq)


@dataclass
class GtidWindow:
    """One chunk's watermarks: the low set, then (after the SELECT) the high set."""

    chunk_id: str
    low: GtidSet
    high: GtidSet | None = None

    def opens(self, source: str, seq: int) -> bool:
        return not self.low.contains(source, seq)

    def closes(self, source: str, seq: int) -> bool:
        return self.high is not None and not self.high.contains(source, seq)

    def server_changed(self) -> bool:
        """Did another server write between the watermarks (a failover during the chunk)?

        Debezium's MySqlReadOnlyIncrementalSnapshotContext.serverUuidChanged: the high set names a
        source (MySQL server UUID, MariaDB domain) the low set lacks. Beyond it, on MariaDB, a domain
        whose last GTID now comes from another server id (a failover within the domain). The window's
        rules then cannot tell which changes the chunk's SELECT saw, so the chunk is read again.
        """
        if self.high is None:
            return False
        if set(self.high.intervals) - set(self.low.intervals):
            return True
        return any(self.low.servers.get(d, server) != server for d, server in self.high.servers.items())

    def reached_by(self, streamed: GtidSet) -> bool:
        """Has the stream executed every transaction of the high watermark (Debezium's reachedHighWatermark)?

        The sources that moved during the chunk must be streamed up to the high set; when none moved, the
        low set's sources up to it (a source the stream has never seen does not hold the window open)."""
        if self.high is None:
            return False
        moved = self.high.newer_than(self.low)
        if moved:
            return all(streamed.top(s) >= top for s, top in moved.items())
        known = [s for s in self.low.intervals if s in streamed.intervals]
        return bool(known) and all(streamed.top(s) >= self.low.top(s) for s in known)


def executed_query(is_mariadb: bool) -> str:
    """The server's executed GTID set (a read: Debezium reads GTID_BINLOG_POS / the binlog status)."""
    return "SELECT @@GLOBAL.gtid_binlog_pos" if is_mariadb else "SELECT @@GLOBAL.gtid_executed"


def read_executed(cur: Any, is_mariadb: bool) -> GtidSet:
    cur.execute(executed_query(is_mariadb))
    row = cur.fetchone()
    text = row[0] if row else None
    if isinstance(text, bytes):
        text = text.decode()
    return GtidSet.parse(text, is_mariadb)


def check_gtids(cur: Any, is_mariadb: bool, host: str) -> None:
    """MySQL needs gtid_mode=ON for GTID watermarks (MariaDB always writes GTIDs to its binlog)."""
    if is_mariadb:
        return
    cur.execute("SELECT @@GLOBAL.gtid_mode")
    row = cur.fetchone()
    mode = (row[0].decode() if isinstance(row[0], bytes) else str(row[0])) if row else "OFF"
    raise_unless_gtids(mode, host)


def raise_unless_gtids(gtid_mode: str, host: str) -> None:
    if gtid_mode.strip().upper() != "ON":
        raise ConnectException(
            f"{READ_ONLY}=true: incremental snapshots then watermark by GTID set, but {host} has "
            f"gtid_mode={gtid_mode}; set gtid_mode=ON and enforce_gtid_consistency=ON on the server, or "
            f"{READ_ONLY}=false to write the watermarks to signal.data.collection"
        )
