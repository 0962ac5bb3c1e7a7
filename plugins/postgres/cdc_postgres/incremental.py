"""PostgresIncrementalSnapshot: signals and the DBLog incremental snapshot for PostgreSQL.

Debezium's SignalBasedIncrementalSnapshotChangeEventSource for PostgreSQL: chunks of
`incremental.snapshot.chunk.size` rows in key order, each read between a low and a high
watermark inserted into the signal table (`signal.data.collection`, `schema.table`, which
must be in the publication), with `insert_insert` or `insert_delete`. The algorithm (window,
chunk loop, de-duplication, context and offsets, signal actions) is cdc_debezium's
IncrementalSnapshotSource; this module is PostgreSQL's part: its tables, the chunk and
maximum-key queries, the watermark writes, the WAL positions and where the emitter hands rows over.

The stream runs on the task's reader thread and the chunks are read on the worker thread of the
engine, so the shared context is guarded by its lock; rows are registered before the high
watermark is written, and keys changed before they are registered are remembered
(IncrementalSnapshotContext.begin_chunk/set_rows). Rows are read as the server's text output,
the same text pgoutput sends, so keys compare and convert exactly as streamed ones; chunk
bounds are compared by the database with row constructors (`(k1, k2) > (%s, %s)`). The next chunk waits
while the task's queue holds a poll batch (or a chunk, if larger): streamed changes then never queue behind
several chunks' rows when the pipeline is slower than the reads (issue 22).

With `read.only=true` (Debezium's PostgresReadOnlyIncrementalSnapshotChangeEventSource) nothing is
written: the watermarks are `pg_current_snapshot()` read before and after the chunk SELECT and the window
is kept from the streamed transactions' ids (incremental_read_only.py); the file and kafka channels drive
it, and the signal table, if set, is still read (signals inserted by someone else, as Debezium allows).

Nothing of it runs unless a signal channel is enabled (`task.py` keeps it None).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.adapt import Loader

from cdc.api import SourceRecord
from cdc_debezium.queue import ChangeEventQueue
from cdc_debezium.signals.config import SignalConfig
from cdc_debezium.signals.incremental import COLLECTIONS, OFFSET_KEYS, Collection
from cdc_debezium.signals.incremental_source import RETRY, SKIP, Chunk, IncrementalSnapshotSource, key_of, task_props
from cdc_debezium.source_info import SnapshotRecord
from cdc_postgres.change_records import PostgresChangeRecordEmitter
from cdc_postgres.incremental_read_only import READ_ONLY, WATERMARK_QUERY, PgSnapshot, XidWindow
from cdc_postgres.schema import PostgresSchema, TableSchema
from cdc_postgres.snapshot import captured_tables

log = logging.getLogger(__name__)


class _RawText(Loader):
    """Every value as the server's text output (what pgoutput sends)."""

    def load(self, data: Any) -> str:
        return bytes(data).decode()


def _split(table_id: str) -> tuple[str, str]:
    schema, _, name = table_id.partition(".")
    return schema, name


def _relation(table_id: str) -> sql.Identifier:
    return sql.Identifier(*_split(table_id))


class PostgresIncrementalSnapshot(IncrementalSnapshotSource):
    """Signals (source, file, kafka channels) and the incremental snapshot of one PostgreSQL task."""

    db_errors = (psycopg.Error,)
    thread_name = "postgres-incremental-snapshot"

    def __init__(
        self,
        signals: SignalConfig,
        dsn: dict[str, Any],
        topic_prefix: str,
        table_filter: Callable[[str], bool],
        task_context: Any,
        stored: dict[str, Any] | None,
    ) -> None:
        self.dsn = dsn
        self.table_filter = table_filter
        self.schema: PostgresSchema | None = None
        self.emitter: PostgresChangeRecordEmitter | None = None
        self._conn: psycopg.Connection | None = None
        self._last_offset: dict[str, Any] | None = None
        self._state: dict[str, Any] = {}
        self._streaming: Any = None
        # Pacing: the task's queue, when the emitter writes to it; the next chunk waits while it holds a poll
        # batch (or a chunk, if larger), so streamed changes never queue behind several chunks' rows.
        self._queue: ChangeEventQueue[Any] | None = None
        # read.only=true: pg_current_snapshot() watermarks (incremental_read_only.py)
        read_only = str(task_props(task_context).get(READ_ONLY) or "false").strip().lower() == "true"
        super().__init__(
            signals, topic_prefix, task_context, stored, read_only, lambda r: self.emitter and self.emitter.emit(r)
        )

    # -- wiring ------------------------------------------------------------------------------
    def attach(self, streaming: Any) -> None:
        """Before streaming starts: the signal table passes the stream's filter, the emitter's row
        events and records pass here, and the worker thread starts."""
        self.schema, self.emitter = streaming.schema, streaming.emitter
        self._attached()
        emitter = streaming.emitter
        base = streaming.table_filter
        if self.signal_table is not None:
            signal_table = self.signal_table
            streaming.table_filter = lambda t: base(t) or t.lower() == signal_table
        create, update, delete, emit = emitter.create, emitter.update, emitter.delete, emitter.emit
        queue = getattr(emit, "__self__", None)
        self._queue = queue if isinstance(queue, ChangeEventQueue) else None
        emitter.create = lambda table, new, pos, offset: self._row("c", table, None, new, pos, offset, create)
        emitter.update = lambda table, old, old_is_key, new, pos, offset: self._row(
            "u", table, old, new, pos, offset, lambda t, n, p, o: update(t, old, old_is_key, n, p, o)
        )
        emitter.delete = lambda table, old, old_is_key, pos, offset, headers=None: self._row(
            "d", table, old, None, pos, offset, lambda t, n, p, o: delete(t, old, old_is_key, p, o, headers)
        )
        emitter.emit = lambda record: emit(self._with_state(record))
        self._signal_captured = base
        if self.read_only:
            # Debezium's processHeartbeat / processTransactionCommittedEvent: called on the reader thread
            # after every commit and every idle read, where the idle window can close.
            self._streaming = streaming
            heartbeat = streaming._maybe_heartbeat

            def after_commit_or_idle() -> None:
                self._xid_reached()
                heartbeat()

            streaming._maybe_heartbeat = after_commit_or_idle
        self._start_worker()

    def _publish_state(self, state: dict[str, Any]) -> None:
        self._state = state

    def _current_offset(self) -> Any:
        return self._last_offset

    def _with_state(self, record: SourceRecord) -> SourceRecord:
        """Every record's offset carries the running snapshot's state, unless it was given its own."""
        offset = record.source_offset
        if isinstance(offset, dict):
            self._last_offset = offset
            if COLLECTIONS not in offset:
                state = self._state
                if state:
                    offset.update(state)
        return record

    def _row(
        self,
        op: str,
        table: TableSchema,
        old: tuple[object, ...] | None,
        new: tuple[object, ...] | None,
        pos: dict[str, Any],
        offset: dict[str, Any],
        forward: Callable[[TableSchema, Any, dict[str, Any], dict[str, Any]], None],
    ) -> None:
        """A streamed row event (reader thread)."""
        if self._on_change(op, table, table.id, old, new, pos, offset):
            forward(table, new, pos, offset)

    def _captures_signal_table(self, table: TableSchema) -> bool:
        return self._signal_captured(table.id)

    def _column(self, row: tuple[object, ...], index: int) -> Any:
        return row[index] if index < len(row) else None

    def _emit_rows(self, rows: list[Any], pos: Any, before: dict[str, Any], after: dict[str, Any]) -> None:
        assert self.emitter is not None
        last = len(rows) - 1
        marker = SnapshotRecord.INCREMENTAL.value
        for i, (table, values) in enumerate(rows):
            self.emitter.read(table, values, pos, after if i == last else before, marker)

    def _drained(self) -> bool:
        """The queue is down to less than a poll batch (or a chunk): the last chunk's rows are (mostly) out, and a
        change streamed now waits behind at most that and the next chunk, however slow the pipeline is."""
        queue = self._queue
        return queue is None or len(queue) < max(queue.max_batch_size, self.signals.chunk_size)

    def _backlog(self) -> int:
        return len(self._queue) if self._queue is not None else 0

    # -- the tables and the chunks (worker thread) -----------------------------------------------
    def captured_collections(self) -> list[str]:
        with psycopg.connect(**self.dsn) as conn:
            return [f"{ns}.{name}" for _, ns, name in captured_tables(conn, self.table_filter)]

    def _db(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(**self.dsn, autocommit=True)
        return self._conn

    def _text_db(self) -> psycopg.Connection:
        """The connection, reading every value of the schema's types as the server's text output."""
        conn = self._db()
        for oid in self.schema.types.types if self.schema is not None else ():
            conn.adapters.register_loader(oid, _RawText)
        return conn

    def _reset_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error as e:
                log.debug("closing the incremental snapshot connection: %s", e)
        self._conn = None

    def _table(self, conn: psycopg.Connection, table_id: str) -> TableSchema | None:
        schema_name, name = _split(table_id)
        row = conn.execute(
            "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s",
            (schema_name, name),
        ).fetchone()
        if row is None or self.schema is None:
            return None
        return self.schema.for_table(int(row[0]), schema_name, name)

    def _chunk_table(self, current: Collection, cached: bool) -> TableSchema | None:
        return self._table(self._db(), current.id)

    def _key_names(self, table: TableSchema) -> list[str]:
        return [c.name for c in table.key_columns]

    def _max_key(self, current: Collection, order: list[str]) -> tuple[Any, ...] | None:
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in order)
        desc = sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(c)) for c in order)
        # No parameters: the filter's `%` stays as it is.
        cond = sql.SQL(" AND ({})").format(sql.SQL(current.condition)) if current.condition else sql.SQL("")
        top = (
            self._text_db()
            .execute(
                sql.SQL("SELECT {} FROM {} WHERE true{} ORDER BY {} LIMIT 1").format(
                    cols, _relation(current.id), cond, desc
                )
            )
            .fetchone()
        )
        return tuple(top) if top is not None else None

    @contextmanager
    def _session(self, threaded: bool) -> Iterator[Any]:
        yield self._text_db()

    def _select_chunk(
        self, conn: psycopg.Connection, chunk: Chunk
    ) -> tuple[dict[Any, Any], tuple[Any, ...] | None, int]:
        table: TableSchema = chunk.table
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in chunk.order)
        marks = sql.SQL(", ").join(sql.Placeholder() * len(chunk.order))
        where = sql.SQL("({}) <= ({})").format(cols, marks)
        args: list[Any] = list(chunk.maximum)
        if chunk.after is not None:
            where = sql.SQL("({}) > ({}) AND {}").format(cols, marks, where)
            args = [*chunk.after, *args]
        values_cols = sql.SQL(", ").join(sql.Identifier(c.name) for c in table.value_columns)
        order_by = sql.SQL(", ").join(sql.Identifier(c) for c in chunk.order)
        # The chunk query has parameters, so psycopg reads `%` as a placeholder: a filter's own `%`
        # (a LIKE pattern, a key literal holding one) is doubled; the maximum's query has none.
        condition = chunk.collection.condition
        cond_args = sql.SQL(" AND ({})").format(sql.SQL(condition.replace("%", "%%"))) if condition else sql.SQL("")
        query = sql.SQL("SELECT {}, {} FROM {} WHERE {}{} ORDER BY {} LIMIT {}").format(
            values_cols, cols, _relation(chunk.collection.id), where, cond_args, order_by, sql.Literal(chunk.size)
        )
        fetched = conn.execute(query, args).fetchall()
        width = max((c.index for c in table.value_columns), default=-1) + 1
        rows: dict[Any, Any] = {}
        end = None
        n = len(table.value_columns)
        for row in fetched:
            values: list[object] = [None] * width
            for c, v in zip(table.value_columns, row[:n], strict=True):
                values[c.index] = v
            as_tuple = tuple(values)
            rows[key_of(table, as_tuple)] = (table, as_tuple)
            end = tuple(row[n:])
        return rows, end, len(fetched)

    def _insert_signal(self, conn: psycopg.Connection, values: tuple[str, str, str]) -> None:
        relation = _relation(self.signals.data_collection or "")
        conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(relation), values)

    def _delete_signal(self, conn: psycopg.Connection, signal_id: str) -> None:
        relation = _relation(self.signals.data_collection or "")
        conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(relation), (signal_id,))

    def _failure(self, error: BaseException) -> str:
        return RETRY if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError) else SKIP

    # -- read.only=true: pg_current_snapshot() watermarks ----------------------------------------
    def _read_only_watermark(self, conn: psycopg.Connection, chunk_id: str, which: str) -> None:
        """Low: the snapshot before the SELECT; high: the one after it, with the WAL position (worker thread)."""
        row = conn.execute(WATERMARK_QUERY).fetchone()
        assert row is not None
        snapshot = PgSnapshot.parse(str(row[0]))
        with self.lock:
            if which == "open":
                self._window = XidWindow(chunk_id, snapshot)
                return
            window = self._window
            if window is not None and window.chunk_id == chunk_id:
                window.high, window.high_lsn = snapshot, int(row[1]) if row[1] is not None else None

    def _transaction_of(self, pos: dict[str, Any]) -> tuple[int] | None:
        xid = pos.get("tx_id")
        return (int(xid),) if xid is not None else None

    def _window_close_at(self, pos: dict[str, Any], offset: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        # The rows rank at this transaction's commit LSN just below its first change, and their
        # offset resumes at that change (as a transaction's BEGIN record does).
        events = int(offset.get("lsn_events_processed") or 1)
        return {**pos, "lsn": int(pos["lsn"]) - 1}, {**offset, "lsn_events_processed": events - 1}

    def _xid_reached(self) -> None:
        """After a commit or an idle read (reader thread): the stream has passed the high watermark's WAL position."""
        streaming = self._streaming
        if self._window is None or streaming is None or streaming._tx is not None:
            return
        lsn = max(streaming.last_received_lsn, streaming.last_commit_lsn or 0)
        with self.lock:
            window = self._window_of_chunk()
            if window is None or not window.reached(lsn):
                return
            # The rows rank (lsn, 0): above every transaction streamed so far (their commit records start
            # below `lsn`, the end of the last record sent) and below every later one, including one whose
            # commit record starts exactly at `lsn` (its changes have lower LSNs: ranked (lsn, lsn), the rows
            # beat them and a stale chunk row won in the lake).
            pos = {"lsn": lsn, "lsn_commit": None, "tx_id": None, "ts_us": time.time_ns() // 1000}
            offset = {"lsn_proc": lsn, "lsn": lsn, "lsn_commit": lsn, "lsn_events_processed": 0,
                      "ts_usec": pos["ts_us"]}  # fmt: skip
            self._read_only_close(pos, offset)

    # -- blocking snapshots (worker thread) ------------------------------------------------------
    # The rows rank at the WAL position read just before their SELECT (DBLog's argument: every change
    # committed before it is in the rows, every later one streams with a higher commit LSN and wins), so the
    # stream need not stop for the result to equal the tables.
    def _blocking_ready(self) -> bool:
        return self._last_offset is not None  # no streamed record yet to resume from: wait for one

    @contextmanager
    def _blocking_session(self) -> Iterator[Any]:
        assert self._last_offset is not None
        yield self._text_db(), {k: v for k, v in self._last_offset.items() if k not in OFFSET_KEYS}

    def _blocking_table(self, session: Any, table_id: str) -> TableSchema | None:
        return self._table(session[0], table_id)

    def _blocking_rows(self, session: Any, current: Collection, table: TableSchema) -> Iterator[int]:
        conn, offset = session
        assert self.emitter is not None
        lsn = int(conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])
        # No commit LSN: the rows rank (lsn, 0), below the changes of a transaction whose commit record starts
        # at `lsn` (cdc_spark/decode/sequence.py); ranked (lsn, lsn) they beat those changes.
        pos = {"lsn": lsn, "lsn_commit": None, "tx_id": None, "ts_us": time.time_ns() // 1000}
        cols = sql.SQL(", ").join(sql.Identifier(c.name) for c in table.value_columns)
        # As Debezium, a blocking snapshot's additional-conditions filter is a whole SELECT.
        query = (
            sql.SQL(current.condition)
            if current.condition
            else sql.SQL("SELECT {} FROM {}").format(cols, _relation(current.id))
        )
        width = max((c.index for c in table.value_columns), default=-1) + 1
        by_name = {c.name: c.index for c in table.value_columns}
        with conn.cursor() as cur:
            cur.execute(query)
            targets = [by_name.get(d.name) for d in cur.description or ()]
            while batch := cur.fetchmany(1024):
                for row in batch:
                    values: list[object] = [None] * width
                    for index, v in zip(targets, row, strict=True):
                        if index is not None:
                            values[index] = v
                    self.emitter.read(table, tuple(values), pos, dict(offset), SnapshotRecord.TRUE.value)
                yield len(batch)
