"""The online verify's source snapshot: one transaction on the verifier's source connection whose
snapshot is exactly at a log position X, and X as the lake's sequence (cdc_spark/decode/sequence.py).

Exact means: every transaction committed before X is visible in the snapshot, none committed at or
after X is. That is what the connector's own initial snapshot needs to meet its stream, so the same
machinery is used:

- MySQL/MariaDB (cdc_mysql.snapshot_start.SnapshotStart, `snapshot.locking.mode=none`): one
  `START TRANSACTION WITH CONSISTENT SNAPSHOT` (REPEATABLE READ). MariaDB reports the snapshot's own
  binlog position (`binlog_snapshot_file` / `binlog_snapshot_position`, taken under its commit-order
  lock): exact, no lock. MySQL reports nothing of the kind, and writes a transaction to the binlog
  before its engine commit, so `SHOW MASTER STATUS` next to the transaction's start can cover a commit
  the snapshot does not see; with gtid_mode=ON the position is read before and after the start with
  no GTID owned in between (no commit in flight: exact, no lock), else the verified tables are read
  locked for the instant the transaction starts (writers to them wait that long). X's sequence is
  `(epoch << 40 | file number, pos, 0, 0)`: a row event's `source.pos` is its own binlog position,
  so every change of a transaction committed before X ranks below, every later one above, and a
  snapshot read at X ranks at X. The epoch is the binlog lineage the connector is on
  (cdc_mysql.lineage.CaughtUpTarget, as `cdc run --until-caught-up`).
- PostgreSQL: a REPEATABLE READ transaction alone is not exactly at any LSN: a commit writes its WAL
  record before it leaves the proc array (and waits for the WAL flush, or a synchronous standby, in
  between), so a transaction whose commit record lies below `pg_current_wal_insert_lsn()`, read
  right after the snapshot, may still be invisible in it; the lake would then hold a change the
  snapshot lacks, a false difference. Instead a TEMPORARY logical replication slot is created with
  an exported snapshot (`CREATE_REPLICATION_SLOT … (SNAPSHOT 'export')`), as the connector does for
  its initial snapshot: the slot's consistent point P and the exported snapshot agree exactly (the
  snapshot holds the transactions whose commit record lies before P). The verifier's transaction
  imports it (`BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT`), then the
  replication connection closes and the server drops the slot: it holds no WAL afterwards. This
  needs what the connector needs anyway (REPLICATION, wal_level=logical) and one free slot of
  max_replication_slots for that instant; creating the slot waits for the transactions running at
  that moment to end. X's sequence is `(P, 0)`, where the sink ranks a snapshot read at P.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc.jobs.source_db import mysql_params, postgres_params
from cdc.jobs.verify.source import SourceReader, SourceTable

DEFAULT_LOCK_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class Point:
    """The position X the source snapshot is at."""

    family: str
    text: str  # as people read it: `mysql-bin.000003:1234 on server_id=1`, `0/16B3748`
    seq: bytes  # X as the lake's `__seq`
    reached: Callable[[Mapping[str, Any]], bool]  # whether a stored source offset is at or past X


def open_point(
    source: SourceReader, config: Mapping[str, Any], tables: list[SourceTable], stored: Mapping[str, Any] | None
) -> Point:
    """Start the snapshot transaction on `source`'s connection (its reads are then at X) and return X.

    `stored`: the job's stored source offset now (MySQL: the lineage epoch the connector is on)."""
    if source.family == "mysql":
        return _mysql(source, config, tables, stored)
    return _postgres(source, config)


def _mysql(
    source: SourceReader, config: Mapping[str, Any], tables: list[SourceTable], stored: Mapping[str, Any] | None
) -> Point:
    import pymysql

    from cdc_mysql.lineage import CaughtUpTarget, server_identity
    from cdc_mysql.snapshot_start import SnapshotStart
    from cdc_spark.decode import sequence

    conn = source.conn  # type: ignore[attr-defined]
    conn.rollback()  # no implicit transaction of an earlier query may hold an older snapshot
    with conn.cursor() as cur:
        identity = server_identity(cur)
        cur.execute("SELECT VERSION()")
        mariadb = "mariadb" in str(cur.fetchone()[0]).lower()
    conn.rollback()
    start = SnapshotStart(
        conn,
        is_mariadb=mariadb,
        locking_mode="none",
        user=str(config.get("database.user", "")),
        lock_timeout_ms=int(config.get("snapshot.lock.timeout.ms") or DEFAULT_LOCK_TIMEOUT_MS),
        captured=lambda _conn: [(t.schema, t.name) for t in tables],
        open_connection=lambda: pymysql.connect(**mysql_params(config, connect_timeout=10, autocommit=True)),
    )
    try:
        at = start.begin()
    finally:
        start.release()
    assert at is not None
    target = CaughtUpTarget(identity, at.file, at.pos).after(dict(stored) if stored else None)
    return Point("mysql", str(target), sequence.mysql(at.file, at.pos, 0, 0, target.min_epoch), target.reached_by)


def _postgres(source: SourceReader, config: Mapping[str, Any]) -> Point:
    from cdc.jobs.source_positions import _postgres_reached
    from cdc_postgres.lsn import format_lsn
    from cdc_postgres.replication import ReplicationConnection
    from cdc_spark.decode import sequence

    conn = source.conn  # type: ignore[attr-defined]
    with ReplicationConnection(postgres_params(config), connect_timeout=10) as rc:
        info = rc.create_slot(f"cdc_verify_{secrets.token_hex(6)}", export_snapshot=True, temporary=True)
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        conn.execute(f"SET TRANSACTION SNAPSHOT '{info.snapshot_name}'")
    lsn = info.consistent_point
    return Point(
        "postgres", format_lsn(lsn), sequence.postgres(None, lsn), lambda offset: _postgres_reached(dict(offset), lsn)
    )


def close_point(source: SourceReader) -> None:
    """End the snapshot transaction."""
    conn = source.conn  # type: ignore[attr-defined]
    if source.family == "mysql":
        conn.rollback()
    else:
        conn.execute("ROLLBACK")
