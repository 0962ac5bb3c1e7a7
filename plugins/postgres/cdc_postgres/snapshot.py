"""PostgresSnapshotChangeEventSource: `r` events read inside the slot's exported snapshot.

The slot is created with an exported snapshot; reading the tables inside that snapshot and
then streaming from the slot's consistent point meet at one LSN: no gap, no duplicate.

Resuming (beyond Debezium, which snapshots again; the MySQL connector resumes the same way).
Each table is read in primary-key order and each fetch (snapshot.fetch.size rows) is a chunk:
the offsets of the `r` records say which tables are done and the key of the last chunk out
(offset_context.py). After a stop or a kill the slot is still at the snapshot's point P1 (no
snapshot offset is ever confirmed); a task finding such an offset opens a NEW consistent
snapshot at P2 (a temporary slot's exported snapshot, task.py) and reads only the rest: the
in-progress table after the stored key, and the tables not done. Its offsets keep P1, so
streaming then starts at P1, not P2: the changes between P1 and P2 are replayed. That is
harmless: rows read at P2 rank at P2, so a sink ordering by position (cdc_spark's `__seq`)
keeps them over the older replayed changes, the deletes between P1 and P2 are replayed, and a
consumer applying events in log order ends at the database's state too. A table's last record
(the `last_in_data_collection`/`last` marker, which the Spark sink takes as a mark clearing the
table's older rows) ranks at P1, so the rows the first attempt read at P1 stay and only rows
older than the whole snapshot go. A table without a primary key, or read by a
snapshot.select.statement.overrides statement, cannot be cut by key: it is read whole, and
resumes from its start.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.adapt import Loader

from cdc_debezium.notifications import InitialSnapshotNotifier
from cdc_debezium.progress import SnapshotProgress
from cdc_debezium.queue import QueueClosed
from cdc_debezium.signals import keys
from cdc_debezium.source_info import SnapshotRecord
from cdc_postgres.change_records import PostgresChangeRecordEmitter
from cdc_postgres.connection import PostgresConnectorError
from cdc_postgres.offset_context import PostgresOffsetContext
from cdc_postgres.offset_context import progress as progress_keys
from cdc_postgres.schema import PostgresSchema
from cdc_postgres.snapshot_chunks import chunked_select, key_types

log = logging.getLogger(__name__)

_TABLES_SQL = """
SELECT c.oid, n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_%%' ORDER BY n.nspname, c.relname
"""


class _RawText(Loader):
    """Rows as the server's text output: the same text pgoutput sends, so one set of converters."""

    def load(self, data: Any) -> str:
        return bytes(data).decode()


def captured_tables(conn: Any, table_filter: Callable[[str], bool]) -> list[tuple[int, str, str]]:
    return [(oid, ns, name) for oid, ns, name in conn.execute(_TABLES_SQL).fetchall() if table_filter(f"{ns}.{name}")]


def _quote(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'


COUNTED_UP_TO = 10_000  # rows counted for a table without statistics: a few milliseconds


def estimate_rows(conn: Any, oid: int, relation: str) -> int:
    """About how many rows the snapshot will read from `relation` (its FROM clause), cheaply; never negative.

    pg_class.reltuples once ANALYZE or VACUUM has run. A table neither has seen holds -1 there
    (PostgreSQL 14+; 0 and relpages 0 before, as after a vacuum of an empty table): its rows are
    then counted up to COUNTED_UP_TO, which is exact for a small table, and a larger one gets the
    planner's estimate, which scales its current size on disk by the rows' expected width.
    Numbers come back as text (the snapshot reads every type raw), so they are cast in SQL:
    float4 prints 1234567 as 1.234567e+06.
    """
    reltuples, relpages = conn.execute(
        "SELECT reltuples::bigint, relpages FROM pg_class WHERE oid = %s", (oid,)
    ).fetchone()
    if int(reltuples) >= 0 and int(relpages) > 0:
        return int(reltuples)
    counted = int(
        conn.execute(f"SELECT count(*) FROM (SELECT FROM {relation} LIMIT {COUNTED_UP_TO + 1}) AS head").fetchone()[0]
    )
    if counted <= COUNTED_UP_TO:
        return counted
    plan = conn.execute(f"EXPLAIN (FORMAT JSON) SELECT FROM {relation}").fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, (str, bytes)) else plan
    return max(counted, int(float(plan[0]["Plan"]["Plan Rows"])))


class PostgresSnapshotChangeEventSource:
    def __init__(
        self,
        dsn: dict[str, Any],
        schema: PostgresSchema,
        emitter: PostgresChangeRecordEmitter,
        table_filter: Callable[[str], bool],
        fetch_size: int,
        progress: SnapshotProgress | None = None,
        locking_mode: str = "shared",
        lock_timeout_ms: int = 10_000,
        via_partition_root: bool = False,
        select_overrides: dict[str, str] | None = None,
        notify: InitialSnapshotNotifier | None = None,
    ) -> None:
        self.dsn = dsn
        # Debezium's Initial Snapshot notifications (notification.enabled.channels); None sends none
        self.notify = notify
        # snapshot.select.statement.overrides: schema.table → the SELECT to read instead of the whole table
        self.select_overrides = select_overrides or {}
        self.schema = schema
        self.emitter = emitter
        self.table_filter = table_filter
        self.fetch_size = fetch_size
        self.locking_mode = locking_mode
        self.lock_timeout_ms = lock_timeout_ms
        self.via_partition_root = via_partition_root
        self.progress = progress if progress is not None else SnapshotProgress(log)

    def _read_structures(self, conn: psycopg.Connection, tables: list[tuple[int, str, str]]) -> dict[int, Any]:
        """Every captured table's structure, read before any row (snapshot.locking.mode=shared: under
        ACCESS SHARE locks, so no DDL changes a table between its structure and its rows being read).

        As Debezium, the locks are held only while the structures are read: they are taken after a
        savepoint and released by rolling back to it; the snapshot transaction goes on.
        """
        if self.locking_mode != "shared" or not tables:
            return {oid: self.schema.for_table(oid, ns, name) for oid, ns, name in tables}
        conn.execute("SAVEPOINT cdc_schema_snapshot")
        conn.execute(f"SET LOCAL lock_timeout = {int(self.lock_timeout_ms)}")
        names = ", ".join(f"{_quote(ns)}.{_quote(name)}" for _, ns, name in tables)
        try:
            conn.execute(f"LOCK TABLE {names} IN ACCESS SHARE MODE")
        except psycopg.errors.LockNotAvailable as e:
            raise PostgresConnectorError(
                f"the snapshot could not lock its tables within snapshot.lock.timeout.ms={self.lock_timeout_ms} "
                f"(another session holds an exclusive lock, e.g. a long ALTER TABLE): {str(e).strip()}. Retry when "
                "it is done, raise snapshot.lock.timeout.ms, or set snapshot.locking.mode=none"
            ) from None
        structures = {oid: self.schema.for_table(oid, ns, name) for oid, ns, name in tables}
        conn.execute("ROLLBACK TO SAVEPOINT cdc_schema_snapshot")  # releases the locks taken after it
        return structures

    def _readable(self, conn: psycopg.Connection, tables: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
        """The tables to read, each row read once and under the table pgoutput will stream it as.

        A parent's plain SELECT also returns its partitions' (and inheritance children's) rows,
        which are read again under the children's own names: each table is read with ONLY.
        Under a publication WITH (publish_via_partition_root = true), pgoutput streams partition
        changes under the root's name: a partitioned root is then read whole, its partitions not.
        """
        kinds = dict(
            (oid, (kind, part))
            for oid, kind, part in conn.execute(
                "SELECT oid, relkind::text, relispartition FROM pg_class WHERE oid = ANY(%s)", ([t[0] for t in tables],)
            ).fetchall()
        )
        self._whole: set[int] = set()
        out = []
        for oid, ns, name in tables:
            kind, is_partition = kinds.get(oid, ("r", False))
            if self.via_partition_root and is_partition:
                log.info("snapshot: %s.%s is a partition, read through its root (publish_via_partition_root)", ns, name)
                continue
            if self.via_partition_root and kind == "p":
                self._whole.add(oid)
            out.append((oid, ns, name))
        return out

    def run(
        self,
        snapshot_name: str | None,
        consistent_point: int,
        should_stop: Callable[[], bool],
        resume: PostgresOffsetContext | None = None,
    ) -> int:
        """Emit every captured row (with `resume`, only the rest); returns the number of rows.

        `consistent_point`: the LSN of the snapshot `snapshot_name` the rows are read in (their
        position). `resume`: an interrupted snapshot's stored offset with its progress keys; the
        offsets then keep its `lsn` (P1), where streaming starts (see the module's "Resuming").
        """
        notify = self.notify if self.notify is not None and self.notify.enabled else None
        if notify is not None:
            notify.started()
        progress = self.progress
        try:
            with psycopg.connect(**self.dsn) as conn:
                conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                if snapshot_name:
                    conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'")
                captured = self._readable(conn, captured_tables(conn, self.table_filter))
                done = tuple(resume.tables_done or ()) if resume is not None else ()
                tables = [t for t in captured if f"{t[1]}.{t[2]}" not in set(done)] if done else captured
                structures = self._read_structures(conn, tables)
                for oid in {t for t in self.schema.types.types}:
                    conn.adapters.register_loader(oid, _RawText)
                if notify is not None:
                    read_ids = [structures[t[0]].id for t in tables]
                    progress = notify.tracking(self.progress, read_ids, sorted(f"{ns}.{n}" for _, ns, n in captured))
                total = self._read(conn, tables, structures, consistent_point, should_stop, resume, progress)
                if total is None:
                    self._aborted()
                    return 0
                conn.execute("COMMIT")
        except psycopg.Error:
            if notify is not None:
                reading = notify.in_progress_tables(progress)
                if len(reading) == 1:
                    notify.table_failed(reading[0])
            self._aborted()
            raise
        except BaseException:
            self._aborted()
            raise
        self.progress.complete()
        if notify is not None:
            notify.completed()
        return total

    def _aborted(self) -> None:
        """ABORTED (a stop, or a failure); a stopped task's queue may refuse it, the log channel has it."""
        if self.notify is None or not self.notify.enabled:
            return
        try:
            self.notify.aborted()
        except QueueClosed as e:
            log.debug("the ABORTED notification could not be queued: %s", e)

    def _read(
        self,
        conn: psycopg.Connection,
        tables: list[tuple[int, str, str]],
        structures: dict[int, Any],
        read_at: int,
        should_stop: Callable[[], bool],
        resume: PostgresOffsetContext | None,
        tracked: SnapshotProgress,
    ) -> int | None:
        """The rows of `tables`, each in primary-key order, one fetch a chunk; None when stopped.

        One row of look-ahead places the markers: a table's last row stays held until a later
        table yields a row, so the snapshot's last row is `last` even when the tables after it
        are empty. Every chunk's last row carries an offset naming its key (snapshot_last_key),
        and the rows after it carry that offset, so a stored offset says which rows are out.
        `tracked`: the task's progress, or the notifier's view of it (its per-table calls notify).
        """
        only = {oid: "" if oid in self._whole else "ONLY " for oid, _, _ in tables}
        relations = {oid: f"{only[oid]}{_quote(ns)}.{_quote(name)}" for oid, ns, name in tables}
        estimates = {oid: estimate_rows(conn, oid, relations[oid]) for oid, _, _ in tables}
        start = resume.lsn if resume is not None and resume.lsn is not None else read_at
        done = tuple(resume.tables_done or ()) if resume is not None else ()
        ts_us = time.time_ns() // 1000
        base = {"snapshot": True, "last_snapshot_record": False, "lsn": start, "lsn_proc": start, "ts_usec": ts_us}
        final_offset = {**base, "last_snapshot_record": True}
        # Rows rank where they are read (P2 on a resume); a table's last row, the sink's mark that clears the
        # table's older rows, ranks at the first attempt's point (P1), so no row read before a stop is cleared.
        read_pos = {"lsn": read_at, "lsn_commit": None, "tx_id": None, "ts_us": ts_us}
        mark_pos = {"lsn": start, "lsn_commit": None, "tx_id": None, "ts_us": ts_us}
        first_overall = resume is None
        total = 0
        # The row held back: [table, values, first in its table, offset, last in its table].
        pending: list[Any] | None = None

        def emit(p: list[Any], last_overall: bool) -> None:
            table, values, first_in_table, offset, last_in_table = p
            marker = SnapshotRecord.of(
                first=first_in_table and p is first_row[0],
                last=last_overall,
                first_in_table=first_in_table,
                last_in_table=last_in_table,
            )
            self.emitter.read(
                table,
                values,
                mark_pos if last_in_table else read_pos,
                final_offset if last_overall else offset,
                marker.value,
            )

        first_row: list[Any] = [None]  # the snapshot's very first record (a fresh snapshot only)
        true = SnapshotRecord.TRUE.value
        tracked.begin(len(tables))
        for oid, _, _ in tables:
            table = structures[oid]
            cols = ", ".join(_quote(c.name) for c in table.value_columns)
            tracked.start_table(table.id, estimates[oid])
            progress = tracked.tables[table.id]  # rows counted in place: no lookup per row
            current = {**base, **progress_keys(done, table.id)}
            with conn.cursor(name=f"cdc_snapshot_{oid}") as cur:
                override = self.select_overrides.get(table.id)
                key_at: list[int] | None = None
                after: tuple[Any, ...] | None = None
                if override is not None:
                    log.info("snapshot of %s reads snapshot.select.statement.overrides: %s", table.id, override)
                    cur.execute(override)
                    targets = _targets(table, [d.name for d in cur.description or []])
                else:
                    at = {c.name: c.index for c in table.value_columns}  # where a column sits in a row
                    key = tuple(table.primary_key)
                    if key and all(k in at for k in key):
                        after = self._resume_key(table, resume)
                        sql, args = chunked_select(cols, relations[oid], key, key_types(conn, oid, key), after)
                        cur.execute(sql, args)
                        key_at = [at[k] for k in key]
                    else:  # no primary key (or one not captured): read whole, resumed from its start
                        cur.execute(f"SELECT {cols} FROM {relations[oid]}")
                    targets = [c.index for c in table.value_columns]
                width = max((c.index for c in table.value_columns), default=-1) + 1
                plain = targets == list(range(width))
                first_in_table = after is None and (resume is None or resume.snapshot_table != table.id)
                while batch := cur.fetchmany(self.fetch_size):
                    if should_stop():
                        return None
                    if pending is not None:
                        emit(pending, False)
                        if pending[0] is table:
                            current = pending[3]
                        pending = None
                    rows = batch if plain else [_place(row, targets, width) for row in batch]
                    rest = rows[:-1]
                    if first_in_table and rest:
                        p = [table, tuple(rows[0]), True, current, False]
                        if first_overall:
                            first_row[0], first_overall = p, False
                        emit(p, False)
                        rest = rest[1:]
                    for values in rest:  # neither the table's first nor possibly its last: `true`
                        self.emitter.read(table, tuple(values), read_pos, current, true)
                    last = rows[-1]
                    boundary = current
                    if key_at is not None:
                        boundary = {**base, **progress_keys(done, table.id, keys.dumps(tuple(last[i] for i in key_at)))}
                    pending = [table, tuple(last), first_in_table and len(rows) == 1, boundary, False]
                    if pending[2] and first_overall:
                        first_row[0], first_overall = pending, False
                    first_in_table = False
                    total += len(rows)
                    progress.rows += len(rows)
                    if progress.rows // 10_000 != (progress.rows - len(rows)) // 10_000:
                        log.info("Snapshot of %s: %d of ~%d rows", table.id, progress.rows, progress.estimate)
            done = (*done, table.id)
            tracked.finish_table(table.id)
            if pending is not None and pending[0] is table:
                pending[3], pending[4] = {**base, **progress_keys(done)}, True
        if pending is not None:
            emit(pending, True)
        return total

    @staticmethod
    def _resume_key(table: Any, resume: PostgresOffsetContext | None) -> tuple[Any, ...] | None:
        """The key after which the interrupted snapshot resumes `table` (None: from its start)."""
        if resume is None:
            return None
        return keys.resume_after(table.id, table.primary_key, resume.snapshot_table, resume.snapshot_last_key)


def _place(row: Any, targets: list[int | None], width: int) -> list[Any]:
    """An overriding SELECT's row re-indexed positionally by `targets` (None: not a captured column)."""
    values: list[Any] = [None] * width
    for index, v in zip(targets, row, strict=True):
        if index is not None:
            values[index] = v
    return values


def _targets(table: Any, names: list[str]) -> list[int | None]:
    """Where each column of an overriding SELECT goes in the row, by name (as Debezium's ColumnUtils.toArray);
    a result column that is not a captured column is dropped, a captured column it lacks stays null."""
    by_name = {c.name: c.index for c in table.value_columns}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        log.warning(
            "snapshot.select.statement.overrides.%s selects %s, which %s does not capture; ignored",
            table.id, ", ".join(unknown), table.id,
        )  # fmt: skip
    return [by_name.get(n) for n in names]
