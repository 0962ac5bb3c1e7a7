"""MySqlSnapshotChangeEventSource: a consistent snapshot emitting `r` events, then the handoff point.

Consistency: every SELECT runs in one `START TRANSACTION WITH CONSISTENT SNAPSHOT` (REPEATABLE
READ) transaction, and streaming starts at the binlog position that transaction is exactly at:
no gap, no duplicate. How that position is read in each `snapshot.locking.mode` (MariaDB's own
report, MySQL under a global or table read lock, or with no commit in flight) is in
snapshot_start.py.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Generator, Iterator
from typing import Any

import pymysql
import pymysql.cursors

from cdc_debezium.filters import compile_list
from cdc_debezium.progress import SnapshotProgress
from cdc_debezium.source_info import SnapshotRecord
from cdc_mysql.catalog import read_tables
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.connection import MySqlConnection
from cdc_mysql.debezium_keys import SNAPSHOT_INCLUDE_COLLECTIONS
from cdc_mysql.dispatcher import EventDispatcher
from cdc_mysql.lineage import BinlogLineage
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_mysql.schema import MySqlSchema
from cdc_mysql.snapshot_decoders import CONVERSIONS
from cdc_mysql.snapshot_parallel import ParallelRead, join_snapshot
from cdc_mysql.snapshot_reader import ReaderProcess, await_connected, end_on_stop, reader_setup, spawn_readers
from cdc_mysql.snapshot_records import Emit, compile_emit
from cdc_mysql.snapshot_start import SnapshotStart, StartPoint
from cdc_mysql.source_info import SourceInfo
from cdc_mysql.table import TableDef

log = logging.getLogger(__name__)


def _q(ident: str) -> str:
    return "`" + ident.replace("`", "``") + "`"


def captured_tables(conn: Any, config: MySqlConnectorConfig) -> list[tuple[str, str]]:
    """(db, table) of every base table the include/exclude lists capture, in name order."""
    with conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
            "ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        rows = [(str(r["TABLE_SCHEMA"]), str(r["TABLE_NAME"])) for r in cur.fetchall()]
    return [(db, table) for db, table in rows if config.captures_table(db, table)]


def missing_rows_advice(db: str, table: str) -> str:
    """How to get the existing rows of a table the snapshot did not read."""
    regex = f"{re.escape(db)}\\.{re.escape(table)}"
    return (
        "To emit them, send an execute-snapshot signal for it (an incremental snapshot, with "
        f"signal.data.collection set: cdc signal job.yaml execute-snapshot --tables {db}.{table}); or "
        "run a one-off connector with another name and database.server.id, "
        f"the same topic.prefix, snapshot.mode=initial_only and table.include.list={regex}; "
        "or restart this connector once with snapshot.mode=always (it re-reads every captured table)"
    )


class MySqlSnapshotChangeEventSource:
    def __init__(
        self,
        config: MySqlConnectorConfig,
        connection: MySqlConnection,
        schema: MySqlSchema,
        source_info: SourceInfo,
        dispatcher: EventDispatcher,
        is_mariadb: bool,
        progress: SnapshotProgress,
        stop: threading.Event,
    ) -> None:
        self.config = config
        self.connection = connection
        self.schema = schema
        self.source_info = source_info
        self.dispatcher = dispatcher
        self.is_mariadb = is_mariadb
        self.progress = progress
        self.stop = stop
        # One fetch is buffered before poll() takes it: keep it within max.queue.size.
        self.fetch_size = max(1, min(config.fetch_size, config.max_queue_size - config.max_batch_size))

    def execute(
        self, with_data: bool = True, at: MySqlOffsetContext | None = None, lineage: BinlogLineage | None = None
    ) -> Generator[None, None, MySqlOffsetContext]:
        """Snapshot schema (and data unless `with_data` is False); returns where streaming starts.

        A generator driven by `poll()` (it yields after each fetch); `at` keeps a stored position
        instead of reading the current one (snapshot.mode=recovery). `lineage`: the epoch and
        server the offsets carry (lineage.py).
        """
        readers = self._spawn_readers() if with_data and at is None else None  # they start while we connect
        try:
            conn = self.connection.connect(autocommit=False, cursorclass=pymysql.cursors.SSCursor, conv=CONVERSIONS)
        except BaseException:
            if readers is not None:
                self._close_readers(readers, kill=True)
            raise
        try:
            offset = yield from self._run(conn, with_data, at, lineage, readers)
            return offset
        finally:
            conn.close()

    def _run(
        self,
        conn: Any,
        with_data: bool,
        at: MySqlOffsetContext | None,
        lineage: BinlogLineage | None,
        readers: tuple[list[ReaderProcess], queue.Queue] | None,
    ) -> Generator[None, None, MySqlOffsetContext]:
        cur = conn.cursor(pymysql.cursors.Cursor)
        cur.execute("SET SESSION time_zone = '+00:00'")
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        start = SnapshotStart(
            conn,
            is_mariadb=self.is_mariadb,
            locking_mode=self.config.locking_mode,
            user=self.config.user,
            lock_timeout_ms=self.config.lock_timeout_ms,
            captured=lambda c: captured_tables(c, self.config),
            open_connection=lambda: self.connection.connect(autocommit=True),
        )
        try:
            if readers is not None:
                await_connected(*readers)
            try:
                point = start.begin(read_position=at is None)
                if at is not None:
                    offset = MySqlOffsetContext(at.file, at.pos, at.gtids, ts_sec=at.ts_sec)
                else:
                    assert point is not None
                    offset = MySqlOffsetContext(point.file, point.pos, point.gtids)
                    if readers is not None and not self._join(readers, start, cur, point):
                        self._close_readers(readers)
                        readers = None
                tables = self._read_schema(conn)
            finally:
                start.release()
        except BaseException:
            if readers is not None:
                self._close_readers(readers, kill=True)
            raise
        if lineage is not None:
            offset.epoch, offset.server_identity = lineage.epoch, lineage.server_identity
        offset.snapshot = with_data
        offset.ts_sec = int(time.time())
        ts_ms = int(time.time() * 1000)
        for table in tables:
            source = self.source_info.struct(
                ts_ms=ts_ms, db=table.db, table=table.name, server_id=0, file=offset.file, pos=offset.pos,
                snapshot=SnapshotRecord.TRUE,
            )  # fmt: skip
            ddl = self._show_create(cur, table)
            change = ("CREATE", f'"{table.db}"."{table.name}"', table, self.schema.meta.get(table.id))
            self.dispatcher.schema_change(table.db, ddl, source, offset.offset(), [change])
            self.schema.schema_for(table)
        yield
        if with_data and readers is not None:
            try:
                yield from self._read_parallel(conn, readers, tables, offset)
            except BaseException:
                self._close_readers(readers, kill=True)
                raise
            self._close_readers(readers)
        elif with_data:
            yield from self._read_data(conn, tables, offset)
        conn.commit()
        offset.snapshot = False
        return offset

    # -- snapshot.max.threads > 1 ------------------------------------------------------------
    def _spawn_readers(self) -> tuple[list[ReaderProcess], queue.Queue] | None:
        """The reader processes of snapshot.max.threads > 1 (connected before any lock is taken)."""
        if self.config.snapshot_threads <= 1:
            return None
        setup = reader_setup(self.connection.settings(), self.config.originals(), self.fetch_size)
        readers = spawn_readers(setup, self.config.snapshot_threads - 1)  # the snapshot's own connection reads too
        # A stopped task does not resume this generator: its readers (and their transactions, whose
        # metadata locks hold off DDL on the tables read) end when the task stops.
        threading.Thread(target=end_on_stop, args=(readers[0], self.stop), name="snapshot-readers", daemon=True).start()
        return readers

    def _join(
        self, readers: tuple[list[ReaderProcess], queue.Queue], start: SnapshotStart, cur: Any, point: StartPoint
    ) -> bool:
        """Opens the readers' transactions at the snapshot's point; False (read on one connection) if that failed.

        Under the global or table read locks no commit can come between the transactions. Without
        them, MariaDB's reported snapshot positions must be the snapshot's; on MySQL the binlog
        position must not have moved, with no GTID owned (snapshot_start.py)."""
        consistent = join_snapshot(*readers, (point.file, point.pos) if self.is_mariadb else None)
        if consistent and not self.is_mariadb and not start.holds_locks():
            consistent = start.unmoved(cur, point)
        if not consistent:
            log.warning(
                "Snapshot: a commit came between the snapshot's transaction and its readers' (snapshot.locking.mode="
                "%s takes no lock), so the data is read on one connection; set snapshot.locking.mode=minimal for "
                "snapshot.max.threads=%d to apply",
                self.config.locking_mode, self.config.snapshot_threads,
            )  # fmt: skip
        return consistent

    @staticmethod
    def _close_readers(readers: tuple[list[ReaderProcess], queue.Queue], kill: bool = False) -> None:
        for r in readers[0]:
            r.close(kill)

    def _read_parallel(
        self, conn: Any, readers: tuple[list[ReaderProcess], queue.Queue], tables: list[TableDef],
        offset: MySqlOffsetContext,
    ) -> Iterator[None]:  # fmt: skip
        run = ParallelRead(
            readers[0], readers[1], self.schema, self.source_info, self.dispatcher, self.progress,
            self.stop.is_set, 2 * self.config.snapshot_threads * self.config.snapshot_threads_multiplier,
            self.fetch_size,
        )  # fmt: skip
        tables = [t for t in tables if self._reads_rows_of(t)]
        yield from run.run(conn, tables, offset, lambda t: self._estimate(conn, t), self._select_override)

    def _read_schema(self, conn: Any) -> list[TableDef]:
        tables = []
        for table, meta in read_tables(conn, captured_tables(conn, self.config), self.is_mariadb):
            self.schema.set_meta(table, meta)
            tables.append(table)
        return tables

    @staticmethod
    def _show_create(cur: Any, table: TableDef) -> str:
        cur.execute(f"SHOW CREATE TABLE {_q(table.db)}.{_q(table.name)}")
        row = cur.fetchone()
        return str(row[1]) if row else ""

    def _estimate(self, conn: Any, table: TableDef) -> int:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                (table.db, table.name),
            )
            row = cur.fetchone()
            return int(row[0] or 0) if row else 0

    def _reads_rows_of(self, table: TableDef) -> bool:
        """Debezium's snapshot.include.collection.list: unset, every captured table's rows are read."""
        patterns = compile_list(SNAPSHOT_INCLUDE_COLLECTIONS, self.config.get(SNAPSHOT_INCLUDE_COLLECTIONS))
        return not patterns or any(p.fullmatch(table.id) for p in patterns)

    def _select_override(self, table: TableDef) -> str | None:
        """Debezium's snapshot.select.statement.overrides.<db>.<table> for `table` (names compared as MySQL
        compares them here: case-insensitively), or None to select every row."""
        for name, statement in self.config.select_overrides.items():
            if name.lower() == table.id.lower():
                log.info("Snapshot of %s reads: %s", table.id, statement)
                return statement
        return None

    def _read_data(self, conn: Any, tables: list[TableDef], offset: MySqlOffsetContext) -> Iterator[None]:
        """One streaming SELECT per table; one row of look-ahead places the `last*` markers.

        Markers follow Debezium: last > first > last_in_data_collection > first_in_data_collection
        > true. The final record carries the completed offset (no `snapshot` key).
        """
        snapshot_offset = offset.offset()
        completed = offset.completed().offset()
        pending: tuple[Emit, tuple[Any, ...], int, bool] | None = None
        self.progress.begin(len(tables))

        def emit(p: tuple[Emit, tuple[Any, ...], int, bool], last_in_table: bool, final: bool) -> None:
            table_emit, values, index, first_in_table = p
            marker = SnapshotRecord.of(
                first=index == 0 and first_in_table,
                last=final,
                first_in_table=first_in_table,
                last_in_table=last_in_table,
            )
            table_emit(values, marker.value, completed if final else snapshot_offset)

        tables = [t for t in tables if self._reads_rows_of(t)]
        for index, table in enumerate(tables):
            if self.stop.is_set():
                raise InterruptedError("snapshot stopped")
            ts = self.schema.schema_for(table)
            names = [c.name for c in table.columns]
            self.progress.start_table(table.id, self._estimate(conn, table))
            first_in_table = True
            with conn.cursor(pymysql.cursors.SSCursor) as cur:
                statement = self._select_override(table)
                if statement is None:
                    cur.execute(f"SELECT * FROM {_q(table.db)}.{_q(table.name)}")
                else:
                    cur.execute(statement)
                    # The override's own columns, by name; a column it leaves out is null.
                    names = [d[0] for d in cur.description or ()]
                table_emit = compile_emit(ts, names, self.source_info, self.dispatcher, offset.file, offset.pos)
                true, row_progress = SnapshotRecord.TRUE.value, self.progress.row
                while batch := cur.fetchmany(self.fetch_size):
                    if self.stop.is_set():
                        raise InterruptedError("snapshot stopped")
                    if pending is not None:
                        emit(pending, pending[2] != index, False)
                        pending = None
                    start = 0
                    if first_in_table:
                        first_in_table, start = False, 1
                        if len(batch) > 1:  # rows follow: not the table's last
                            emit((table_emit, batch[0], index, True), False, False)
                        else:
                            pending = (table_emit, batch[0], index, True)
                    for values in batch[start:-1]:  # neither the table's first nor possibly its last: `true`
                        table_emit(values, true, snapshot_offset)
                    if len(batch) > start:
                        pending = (table_emit, batch[-1], index, False)
                    for _ in batch:
                        row_progress(table.id)
                    yield
            self.progress.finish_table(table.id)
        if pending is not None:
            emit(pending, True, True)
        self.progress.complete()
        yield
