"""PostgresSnapshotChangeEventSource: `r` events read inside the slot's exported snapshot.

The slot is created with an exported snapshot; reading the tables inside that snapshot and
then streaming from the slot's consistent point meet at one LSN: no gap, no duplicate.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.adapt import Loader

from cdc_debezium.progress import SnapshotProgress
from cdc_debezium.source_info import SnapshotRecord
from cdc_postgres.change_records import PostgresChangeRecordEmitter
from cdc_postgres.connection import PostgresConnectorError
from cdc_postgres.schema import PostgresSchema

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
    ) -> None:
        self.dsn = dsn
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

    def run(self, snapshot_name: str | None, consistent_point: int, should_stop: Callable[[], bool]) -> int:
        """Emit every captured row; returns the number of rows."""
        with psycopg.connect(**self.dsn) as conn:
            conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            if snapshot_name:
                conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot_name}'")
            tables = self._readable(conn, captured_tables(conn, self.table_filter))
            structures = self._read_structures(conn, tables)
            for oid in {t for t in self.schema.types.types}:
                conn.adapters.register_loader(oid, _RawText)
            only = {oid: "" if oid in self._whole else "ONLY " for oid, _, _ in tables}
            estimates = {
                oid: estimate_rows(conn, oid, f"{only[oid]}{_quote(ns)}.{_quote(name)}") for oid, ns, name in tables
            }
            total = 0
            # One-row look-ahead for the snapshot markers: (table, values, first overall, first in its
            # table, last in its table). A table's last row stays held until a later table yields a
            # row, so the snapshot's last row is `last` even when the tables after it are empty.
            pending: tuple[Any, ...] | None = None
            self.progress.begin(len(tables))
            ts_us = time.time_ns() // 1000
            for oid, ns, name in tables:
                table = structures[oid]
                cols = ", ".join(_quote(c.name) for c in table.value_columns)
                self.progress.start_table(table.id, estimates[oid])
                progress = self.progress.tables[table.id]  # rows counted in place: no lookup per row
                with conn.cursor(name=f"cdc_snapshot_{oid}") as cur:
                    cur.itersize = self.fetch_size
                    override = self.select_overrides.get(table.id)
                    if override is not None:
                        log.info("snapshot of %s reads snapshot.select.statement.overrides: %s", table.id, override)
                        cur.execute(override)
                        targets = _targets(table, [d.name for d in cur.description or []])
                    else:
                        cur.execute(f"SELECT {cols} FROM {only[oid]}{_quote(ns)}.{_quote(name)}")
                        targets = [c.index for c in table.value_columns]
                    width = max((c.index for c in table.value_columns), default=-1) + 1
                    first_in_table = True
                    for row in cur:
                        if should_stop():
                            return total
                        # Columns arrive in `targets` order: re-index them positionally (None: not a column).
                        values = [None] * width
                        for index, v in zip(targets, row, strict=True):
                            if index is not None:
                                values[index] = v
                        if pending is not None:
                            self._emit(*pending, last_overall=False, consistent_point=consistent_point, ts_us=ts_us)
                        pending = (table, tuple(values), total == 0, first_in_table, False)
                        first_in_table = False
                        total += 1
                        progress.rows += 1
                        if progress.rows % 10_000 == 0:
                            log.info("Snapshot of %s: %d of ~%d rows", table.id, progress.rows, progress.estimate)
                self.progress.finish_table(table.id)
                if pending is not None and pending[0] is table:
                    pending = (*pending[:4], True)
            if pending is not None:
                self._emit(*pending, last_overall=True, consistent_point=consistent_point, ts_us=ts_us)
            conn.execute("COMMIT")
        self.progress.complete()
        return total

    def _emit(
        self,
        table: Any,
        values: tuple,
        first_overall: bool,
        first_in_table: bool,
        last_in_table: bool,
        *,
        last_overall: bool,
        consistent_point: int,
        ts_us: int,
    ) -> None:
        marker = SnapshotRecord.of(
            first=first_overall, last=last_overall, first_in_table=first_in_table, last_in_table=last_in_table
        )
        pos = {"lsn": consistent_point, "lsn_commit": None, "tx_id": None, "ts_us": ts_us}
        offset = {
            "snapshot": True,
            "last_snapshot_record": last_overall,
            "lsn": consistent_point,
            "lsn_proc": consistent_point,
            "ts_usec": ts_us,
        }
        self.emitter.read(table, values, pos, offset, marker.value)


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
