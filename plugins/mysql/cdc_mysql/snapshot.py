"""MySqlSnapshotChangeEventSource: a consistent snapshot emitting `r` events, then the handoff point.

Consistency: every SELECT runs in one `START TRANSACTION WITH CONSISTENT SNAPSHOT` (REPEATABLE
READ) transaction, and streaming starts at the binlog position that transaction is exactly at:
no gap, no duplicate. How that position is read in each `snapshot.locking.mode` (MariaDB's own
report, MySQL under a global or table read lock, or with no commit in flight) is in
snapshot_start.py.

Resuming (beyond Debezium, which snapshots again; Flink CDC's chunked snapshot resumes the same
way). Each table is read in primary-key order and each fetch is a chunk: the offsets of the
`r` records say which tables are done and the key of the last chunk out (offset_context.py).
After a stop or a kill, a task finding such an offset opens a NEW consistent snapshot at the
current position P2 and reads only the rest: the in-progress table after the stored key, and
the tables not done. Its offsets keep the first attempt's position P1, so streaming then starts
at P1, not P2: the changes between P1 and P2 are replayed. That is harmless: rows read at P2
rank at P2, so a sink ordering by position (cdc_spark's `__seq`) keeps them over the older
replayed changes, the deletes between P1 and P2 are replayed, and a consumer that applies
events in log order ends at the database's state too. A table's last record (the
`last_in_data_collection`/`last` marker, which the Spark sink takes as a mark clearing the
table's older rows) carries P1, so the rows the first attempt read at P1 stay and only rows
older than the whole snapshot go. A table read by a snapshot.select.statement.overrides
statement, or without a primary key, resumes from its start. The replay of P1..P2 decodes each
row with its TABLE_MAP's columns, as any lagging reader does, so a DDL in between is no obstacle.
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import pymysql
import pymysql.cursors

from cdc.api import ConnectException
from cdc_debezium.filters import compile_list
from cdc_debezium.notifications import InitialSnapshotNotifier
from cdc_debezium.progress import SnapshotProgress
from cdc_debezium.signals import keys
from cdc_debezium.source_info import SnapshotRecord
from cdc_mysql.catalog import read_tables
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.connection import CONNECTION_LOST, MySqlConnection, error_text
from cdc_mysql.debezium_keys import SNAPSHOT_INCLUDE_COLLECTIONS
from cdc_mysql.dispatcher import EventDispatcher
from cdc_mysql.lineage import BinlogLineage
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_mysql.schema import MySqlSchema
from cdc_mysql.snapshot_decoders import CONVERSIONS
from cdc_mysql.snapshot_fetch import RowReader
from cdc_mysql.snapshot_parallel import ParallelRead, join_snapshot
from cdc_mysql.snapshot_reader import ReaderProcess, await_connected, end_on_stop, reader_setup, spawn_readers
from cdc_mysql.snapshot_records import compile_emit
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
        "or restart this connector once with snapshot.mode=always (it re-reads every captured table). With "
        "snapshot.new.tables=parallel, tables added to the include lists from then on are read by themselves"
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
        self._conn: Any | None = None  # the snapshot's transaction, while it is open
        # Debezium's initial snapshot notifications (notification.enabled.channels), on the records' queue
        self.notify = InitialSnapshotNotifier(config.originals(), config.topic_prefix, dispatcher._put)
        self._notifying = False  # STARTED sent, neither COMPLETED nor ABORTED yet
        self._notify_lock = threading.Lock()  # a stop (close()) and the snapshot's own end race to send ABORTED

    def close(self) -> None:
        """Ends the snapshot's transaction from the task's stop(): a stopped task never resumes this generator,
        and the transaction's metadata locks would hold off DDL (a DROP DATABASE waits for ever) until
        the garbage collector found the task. A stopped data snapshot is ABORTED (Debezium's interrupted one)."""
        if self.stop.is_set():
            self._end_notice(aborted=True)
        self._close_connection()

    def _end_notice(self, aborted: bool) -> None:
        """COMPLETED or ABORTED, once, after STARTED."""
        with self._notify_lock:
            sending, self._notifying = self._notifying, False
        if sending:
            (self.notify.aborted if aborted else self.notify.completed)()

    def _close_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and conn.open:
            try:
                conn.close()
            except Exception as e:  # already closed by the generator, or the server is gone
                log.debug("Closing the snapshot's connection: %s", e)

    def execute(
        self,
        with_data: bool = True,
        at: MySqlOffsetContext | None = None,
        lineage: BinlogLineage | None = None,
        resume: MySqlOffsetContext | None = None,
    ) -> Generator[None, None, MySqlOffsetContext]:
        """Snapshot schema (and data unless `with_data` is False); returns where streaming starts.

        A generator driven by `poll()` (it yields after each fetch); `at` keeps a stored position
        instead of reading the current one (snapshot.mode=recovery). `lineage`: the epoch and
        server the offsets carry (lineage.py). `resume`: the stored offset of an interrupted
        snapshot with its progress keys (offset_context.py): only the rest is read (see the
        module's "Resuming").

        A data snapshot sends Debezium's "Initial Snapshot" notifications (cdc_debezium.notifications):
        STARTED, per table IN_PROGRESS and TABLE_SCAN_COMPLETED, then COMPLETED, or ABORTED when it
        fails or is stopped.
        """
        if with_data and at is None and self.notify.enabled:
            self._notifying = True
            self.notify.started()
        try:
            offset = yield from self._execute(with_data, at, lineage, resume)
        except pymysql.err.OperationalError as e:
            self._end_notice(aborted=True)
            if e.args and e.args[0] in CONNECTION_LOST:
                raise self._lost(e) from e
            raise
        except BaseException:
            self._end_notice(aborted=True)
            raise
        self._end_notice(aborted=False)
        return offset

    def _lost(self, e: pymysql.err.OperationalError) -> ConnectException:
        """The server went away mid-snapshot: one line saying what a restart does."""
        c = self.config
        return ConnectException(
            f"The snapshot lost its connection to {c.hostname}:{c.port} ({error_text(e)}). Restart the task once "
            "the server is back: the snapshot resumes after the last chunk whose records are stored "
            "(snapshot.mode=always starts it over)"
        )

    def _execute(
        self,
        with_data: bool,
        at: MySqlOffsetContext | None,
        lineage: BinlogLineage | None,
        resume: MySqlOffsetContext | None,
    ) -> Generator[None, None, MySqlOffsetContext]:
        readers = self._spawn_readers() if with_data and at is None else None  # they start while we connect
        try:
            conn = self.connection.connect(autocommit=False, cursorclass=pymysql.cursors.SSCursor, conv=CONVERSIONS)
        except BaseException:
            if readers is not None:
                self._close_readers(readers, kill=True)
            raise
        self._conn = conn
        try:
            offset = yield from self._run(conn, with_data, at, lineage, readers, resume)
            return offset
        finally:
            self._close_connection()

    def _run(
        self,
        conn: Any,
        with_data: bool,
        at: MySqlOffsetContext | None,
        lineage: BinlogLineage | None,
        readers: tuple[list[ReaderProcess], queue.Queue] | None,
        resume: MySqlOffsetContext | None = None,
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
        # Rows are read at the snapshot's point; on a resume that is a new one (P2), while the offsets keep
        # the first attempt's position (P1), where streaming starts.
        read_at = (offset.file, offset.pos)
        if resume is not None and with_data and at is None:
            log.info(
                "Resuming the interrupted snapshot taken at %s:%d (%d tables done%s): the rest is read at %s:%d, "
                "then the binlog is streamed from %s:%d",
                resume.file, resume.pos, len(resume.tables_done or ()),
                f", {resume.snapshot_table} after key {resume.snapshot_last_key}" if resume.snapshot_last_key else "",
                offset.file, offset.pos, resume.file, resume.pos,
            )  # fmt: skip
            offset = MySqlOffsetContext(resume.file, resume.pos, resume.gtids)
            offset.tables_done = resume.tables_done
            offset.snapshot_table, offset.snapshot_last_key = resume.snapshot_table, resume.snapshot_last_key
        elif with_data:
            offset.tables_done = ()
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
            # The server's own text declares the server's types; followed from here (declared_types.py)
            self.schema.observe_ddl(table.db, ddl)
            change = ("CREATE", f'"{table.db}"."{table.name}"', table, self.schema.meta.get(table.id))
            self.dispatcher.schema_change(table.db, ddl, source, offset.offset(), [change])
            self.schema.schema_for(table)
        yield
        if with_data:
            done = set(offset.tables_done or ())
            read = [t for t in tables if self._reads_rows_of(t)]
            # IN_PROGRESS names the tables read, TABLE_SCAN_COMPLETED every captured table (as Debezium's)
            progress = self.notify.tracking(self.progress, [t.id for t in read], [t.id for t in tables])
            all_tables, tables = tables, [t for t in read if t.id not in done]
            try:
                if readers is not None:
                    try:
                        captured = [t.id for t in all_tables]
                        yield from self._read_parallel(conn, readers, tables, offset, read_at, progress, captured)
                    except BaseException:
                        self._close_readers(readers, kill=True)
                        raise
                    self._close_readers(readers)
                else:
                    yield from self._read_data(conn, tables, offset, read_at, progress)
            except pymysql.Error:
                reading = self.notify.in_progress_tables(progress)
                if len(reading) == 1:  # the table the error hit (several read at once: not known here)
                    self.notify.table_failed(reading[0])
                raise
        conn.commit()
        offset.snapshot = False
        offset.tables_done = offset.snapshot_table = offset.snapshot_last_key = None
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
        offset: MySqlOffsetContext, read_at: tuple[str, int], progress: SnapshotProgress, captured: list[str],
    ) -> Iterator[None]:  # fmt: skip
        run = ParallelRead(
            readers[0], readers[1], self.schema, self.source_info, self.dispatcher, progress,
            self.stop.is_set, 2 * self.config.snapshot_threads * self.config.snapshot_threads_multiplier,
            self.fetch_size, self.notify, captured,
        )  # fmt: skip
        yield from run.run(conn, tables, offset, lambda t: self._estimate(conn, t), self._select_override, read_at)

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

    def _read_data(
        self,
        conn: Any,
        tables: list[TableDef],
        offset: MySqlOffsetContext,
        read_at: tuple[str, int],
        progress: SnapshotProgress,
    ) -> Iterator[None]:
        """One streaming SELECT per table, in primary-key order; one row of look-ahead places the `last*` markers.

        Markers follow Debezium: last > first > last_in_data_collection > first_in_data_collection
        > true. The final record carries the completed offset (no `snapshot` key). Every fetch is
        a chunk: its last row's offset names its key (snapshot_last_key), and the rows after it
        carry that offset, so a stored offset says which rows are out (see "Resuming").
        """
        completed = offset.completed().offset()
        done = tuple(offset.tables_done or ())
        resumed = offset.snapshot_table is not None or bool(done) or read_at != (offset.file, offset.pos)
        first_table = None if resumed or not tables else tables[0].id
        current = offset.progress(done)
        # The row held back: (emit, emit at the mark position, values, first_in_table, offset, last_in_table).
        pending: list[Any] | None = None
        progress.begin(len(tables))

        def emit(p: list[Any], final: bool) -> None:
            table_emit, mark_emit, values, first_in_table, row_offset, last_in_table, table_id = p
            marker = SnapshotRecord.of(
                first=first_in_table and table_id == first_table,
                last=final,
                first_in_table=first_in_table,
                last_in_table=last_in_table,
            )
            (mark_emit if last_in_table else table_emit)(values, marker.value, completed if final else row_offset)

        # Rows parsed off the wire (snapshot_fetch.py) in batches of at most max.batch.size: the records
        # of one batch are out of the generator before the next is built (fewer live objects for the GC).
        reader, batch_size = RowReader(), min(self.fetch_size, self.config.max_batch_size)
        for table in tables:
            if self.stop.is_set():
                raise InterruptedError("snapshot stopped")
            ts = self.schema.schema_for(table)
            names = [c.name for c in table.columns]
            progress.start_table(table.id, self._estimate(conn, table))
            after = self._resume_key(table, offset)
            first_in_table = after is None and table.id != offset.snapshot_table
            with _streaming_cursor(conn) as cur:
                statement = self._select_override(table)
                if statement is None:
                    sql, args = chunked_select(table, after)
                    cur.execute(sql, args)
                    key_at = [names.index(c) for c in table.primary_key] if table.primary_key else None
                else:
                    cur.execute(statement)
                    # The override's own columns, by name; a column it leaves out is null.
                    names = [d[0] for d in cur.description or ()]
                    key_at = None  # the override's order is its own: this table resumes from its start
                table_emit = compile_emit(ts, names, self.source_info, self.dispatcher, *read_at)
                mark_emit = (
                    table_emit
                    if read_at == (offset.file, offset.pos)
                    else compile_emit(ts, names, self.source_info, self.dispatcher, offset.file, offset.pos)
                )
                current = offset.progress(done, table.id)
                true, row_progress = SnapshotRecord.TRUE.value, progress.row
                while batch := reader.fetch(cur, batch_size):
                    if self.stop.is_set():
                        raise InterruptedError("snapshot stopped")
                    if pending is not None:
                        emit(pending, False)
                        if pending[6] == table.id:
                            current = pending[4]
                        pending = None
                    start, last_is_first = 0, False
                    if first_in_table:
                        first_in_table = False
                        if len(batch) > 1:  # rows follow: not the table's last
                            emit([table_emit, mark_emit, batch[0], True, current, False, table.id], False)
                            start = 1
                        else:
                            last_is_first = True
                    for values in batch[start:-1]:  # neither the table's first nor possibly its last: `true`
                        table_emit(values, true, current)
                    last = batch[-1]
                    boundary = current
                    if key_at is not None:
                        key = tuple(last[i] for i in key_at)
                        if None not in key:  # a key that reads back as NULL (a zero date) matches nothing
                            boundary = offset.progress(done, table.id, keys.dumps(key))
                    # Held back (the table's last row carries its mark); its offset: the chunk's boundary.
                    pending = [table_emit, mark_emit, last, last_is_first, boundary, False, table.id]
                    for _ in batch:
                        row_progress(table.id)
                    yield
            done = (*done, table.id)
            current = offset.progress(done)
            if pending is not None and pending[6] == table.id:
                pending[4], pending[5] = current, True
            progress.finish_table(table.id)
        if pending is not None:
            emit(pending, True)
        progress.complete()
        yield

    @staticmethod
    def _resume_key(table: TableDef, offset: MySqlOffsetContext) -> tuple[Any, ...] | None:
        """The key after which the interrupted snapshot resumes `table` (None: from its start)."""
        return keys.resume_after(table.id, table.primary_key, offset.snapshot_table, offset.snapshot_last_key)


@contextmanager
def _streaming_cursor(conn: Any) -> Iterator[Any]:
    """An SSCursor; once the task's stop() closed the connection, its unread rows are dropped, not read."""
    cur = conn.cursor(pymysql.cursors.SSCursor)
    try:
        yield cur
    finally:
        if conn.open:
            cur.close()
        elif getattr(cur, "_result", None) is not None:
            cur._result.unbuffered_active = False  # its __del__ would read the closed socket


def chunked_select(table: TableDef, after: tuple[Any, ...] | None) -> tuple[str, tuple[Any, ...] | None]:
    """`SELECT *` of `table` in primary-key order (no order without a key), from after the key `after`.

    InnoDB reads its clustered index in key order, so the ORDER BY costs no sort; the server compares
    the stored key under the columns' own collations and types, as snapshot_chunks.py does.
    """
    sql = f"SELECT * FROM {_q(table.db)}.{_q(table.name)}"
    key = table.primary_key
    if not key:
        return sql, None
    cols = ", ".join(_q(c) for c in key)
    expr = cols if len(key) == 1 else f"({cols})"
    if after is not None:
        marks = ", ".join(["%s"] * len(key))
        sql += f" WHERE {expr} > {marks if len(key) == 1 else f'({marks})'}"
    return f"{sql} ORDER BY {cols}", after
