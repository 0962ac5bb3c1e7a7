"""PostgresIncrementalSnapshot: signals and the DBLog incremental snapshot for PostgreSQL.

Debezium's SignalBasedIncrementalSnapshotChangeEventSource for PostgreSQL: chunks of
`incremental.snapshot.chunk.size` rows in key order, each read between a low and a high
watermark inserted into the signal table (`signal.data.collection`, `schema.table`, which
must be in the publication), with `insert_insert` or `insert_delete`. The WAL stream sees the
watermarks; a streamed change to a buffered key inside the window drops that key's row; at the
high watermark the rest is emitted as `op: r` with `source.snapshot: incremental`.

The stream runs on the task's reader thread and the chunks are read on a thread of this
module, so the shared context is guarded by a lock; rows are registered before the high
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

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql
from psycopg.adapt import Loader

from cdc.api import SourceRecord
from cdc_debezium.notifications import (
    EMPTY,
    NO_PRIMARY_KEY,
    SQL_EXCEPTION,
    UNKNOWN_SCHEMA,
    IncrementalSnapshotNotifier,
    InitialSnapshotNotifier,
)
from cdc_debezium.queue import ChangeEventQueue
from cdc_debezium.signals import record as signal_types
from cdc_debezium.signals.channels import open_channels
from cdc_debezium.signals.config import SignalConfig
from cdc_debezium.signals.incremental import COLLECTIONS, OFFSET_KEYS, Collection, IncrementalSnapshotContext
from cdc_debezium.signals.processor import SignalProcessor
from cdc_debezium.signals.record import SignalRecord
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


def key_of(table: TableSchema, values: tuple[object, ...]) -> Any:
    key = table.key(values)
    if key is None:
        return None
    out = tuple(key._values)
    try:
        hash(out)
    except TypeError:
        return repr(out)
    return out


def _text(values: tuple[object, ...], index: int) -> str | None:
    if index >= len(values) or values[index] is None:
        return None
    v = values[index]
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


class PostgresIncrementalSnapshot:
    """Signals (source, file, kafka channels) and the incremental snapshot of one PostgreSQL task."""

    def __init__(
        self,
        signals: SignalConfig,
        dsn: dict[str, Any],
        topic_prefix: str,
        table_filter: Callable[[str], bool],
        task_context: Any,
        stored: dict[str, Any] | None,
    ) -> None:
        self.signals = signals
        self.dsn = dsn
        self.table_filter = table_filter
        self.ctx = IncrementalSnapshotContext.load(stored)
        self.lock = threading.RLock()
        self.processor = SignalProcessor(self, lambda: self._last_offset)
        self.channels = open_channels(signals, task_context, topic_prefix)
        table = signals.data_collection
        self.signal_table = table.lower() if table else None
        self.schema: PostgresSchema | None = None
        self.emitter: PostgresChangeRecordEmitter | None = None
        self._conn: psycopg.Connection | None = None
        self._tables: dict[str, TableSchema] = {}
        self._last_offset: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_poll = 0.0
        self._retry_at = 0.0
        self.rows_emitted = 0
        self.chunks = 0
        self._blocking_queue: list[Collection] = []
        configs = getattr(task_context, "configs", None)
        self.notify = IncrementalSnapshotNotifier(
            dict(configs()) if callable(configs) else {}, topic_prefix, lambda r: self.emitter and self.emitter.emit(r)
        )
        # A blocking snapshot reports as Debezium's does, with the Initial Snapshot notifications.
        self.notify_blocking = InitialSnapshotNotifier(
            dict(configs()) if callable(configs) else {}, topic_prefix, lambda r: self.emitter and self.emitter.emit(r)
        )
        # read.only=true: pg_current_snapshot() watermarks (incremental_read_only.py), the open chunk's window
        props = dict(configs()) if callable(configs) else {}
        self.read_only = str(props.get(READ_ONLY) or "false").strip().lower() == "true"
        self._xid_window: XidWindow | None = None
        self._streaming: Any = None
        # Pacing: the task's queue, when the emitter writes to it; the next chunk waits while it holds a poll
        # batch (or a chunk, if larger), so streamed changes never queue behind several chunks' rows.
        self._queue: ChangeEventQueue[Any] | None = None

    # -- wiring ------------------------------------------------------------------------------
    def attach(self, streaming: Any) -> None:
        """Before streaming starts: the signal table passes the stream's filter, the emitter's row
        events and records pass here, and the chunk thread starts."""
        self.schema, self.emitter = streaming.schema, streaming.emitter
        if self.ctx.running:
            self.ctx.keep_captured(self.captured_collections())
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
        self._thread = threading.Thread(target=self._work, name="postgres-incremental-snapshot", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(10)
        for channel in self.channels:
            closer = getattr(channel, "close", None)
            if closer is not None:
                closer()
        if self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error as e:
                log.debug("closing the incremental snapshot connection: %s", e)
            self._conn = None

    def _with_state(self, record: SourceRecord) -> SourceRecord:
        """Every record's offset carries the running snapshot's state, unless it was given its own."""
        offset = record.source_offset
        if isinstance(offset, dict):
            self._last_offset = offset
            if COLLECTIONS not in offset:
                with self.lock:
                    state = self.ctx.offset()
                if state:
                    offset.update(state)
        return record

    # -- the stream's row events (reader thread) -----------------------------------------------
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
        table_id = table.id
        if self._xid_window is not None:
            self._xid_step(pos, offset)
        if self.signal_table is not None and table_id.lower() == self.signal_table:
            self._signal_row(op, old, new, pos, offset)
            if not self._signal_captured(table_id):
                return
        else:
            with self.lock:
                ctx = self.ctx
                current = ctx.current
                if ctx.window_open and current is not None and current.id == table_id:
                    if old is not None:
                        ctx.deduplicate(key_of(table, old))
                    if new is not None:
                        ctx.deduplicate(key_of(table, new))
        forward(table, new, pos, offset)

    def _signal_row(
        self, op: str, old: tuple[object, ...] | None, new: tuple[object, ...] | None, pos: dict[str, Any],
        offset: dict[str, Any],
    ) -> None:  # fmt: skip
        with self.lock:
            ctx = self.ctx
            if op == "d" and old is not None:
                insert_delete = self.signals.watermarking == "insert_delete" and ctx.chunk_id is not None
                if insert_delete and _text(old, 0) == f"{ctx.chunk_id}-open":
                    self._close_window(pos, offset)
                return
            if op != "c" or new is None:
                return
            signal_id, kind = _text(new, 0) or "", _text(new, 1) or ""
            if kind == signal_types.WINDOW_OPEN:
                if ctx.chunk_id and signal_id == f"{ctx.chunk_id}-open":
                    ctx.window_open = True
                return
            if kind == signal_types.WINDOW_CLOSE:
                if ctx.chunk_id and signal_id == f"{ctx.chunk_id}-close":
                    self._close_window(pos, offset)
                return
        if "source" in self.signals.channels:
            with self.lock:
                self.processor.process(SignalRecord(signal_id, kind, _text(new, 2), "source"))

    def _close_window(self, pos: dict[str, Any], offset: dict[str, Any]) -> None:
        ctx = self.ctx
        if not ctx.window_open:
            log.warning("Incremental snapshot chunk %s: high watermark without a low one; read again", ctx.chunk_id)
            ctx.forget_chunk()
            return
        # Every row but the last carries the offset from before this chunk: a task stopped after part
        # of the chunk is durable reads the whole chunk again; the last row's offset moves past it.
        before = {k: v for k, v in offset.items() if k not in OFFSET_KEYS}
        before.update(ctx.offset())
        table_id = ctx.current.id if ctx.current is not None else ""
        rows = ctx.close_window()
        after = {k: v for k, v in offset.items() if k not in OFFSET_KEYS}
        after.update(ctx.offset())
        assert self.emitter is not None
        last = len(rows) - 1
        marker = SnapshotRecord.INCREMENTAL.value
        for i, (table, values) in enumerate(rows):
            self.emitter.read(table, values, pos, after if i == last else before, marker)
        self.rows_emitted += len(rows)
        self.chunks += 1
        self.notify.chunk(ctx, table_id, len(rows))
        if not ctx.running:
            log.info("Incremental snapshot completed (%d rows in %d chunks)", self.rows_emitted, self.chunks)

    # -- SnapshotControl (the signal actions; called with the lock held) ---------------------
    def captured_collections(self) -> list[str]:
        with psycopg.connect(**self.dsn) as conn:
            return [f"{ns}.{name}" for _, ns, name in captured_tables(conn, self.table_filter)]

    def add_collections(self, collections: list[Collection], signal_id: str) -> None:
        if self.signal_table is None and not self.read_only:
            log.warning(
                "Signal %r: an incremental snapshot needs signal.data.collection (the table its watermarks are "
                "written to); set it and send the signal again; ignored",
                signal_id,
            )
            return
        added = self.ctx.add(collections, signal_id)
        self.notify.started(self.ctx, signal_id, [c.id for c in added])
        log.info("Signal %r: incremental snapshot of %s queued", signal_id, ", ".join(c.id for c in added) or "none")

    def stop_collections(self, ids: set[str] | None, signal_id: str) -> None:
        dropped = self.ctx.remove(ids)
        self.notify.aborted(self.ctx, signal_id, dropped)
        log.info("Signal %r: incremental snapshot of %s stopped", signal_id, ", ".join(dropped) or "nothing")

    def pause(self, signal_id: str) -> None:
        self.ctx.paused = True
        self.notify.paused(self.ctx)
        log.info("Signal %r: incremental snapshot paused", signal_id)

    def resume(self, signal_id: str) -> None:
        self.ctx.paused = False
        self.notify.resumed(self.ctx)
        log.info("Signal %r: incremental snapshot resumed", signal_id)

    # -- blocking snapshots ------------------------------------------------------------------
    def blocking_snapshot(self, collections: list[Collection], signal_id: str) -> None:
        """Debezium's blocking snapshot, read on the chunk thread: the rows rank at the WAL position read
        just before their SELECT (DBLog's argument: every change committed before it is in the rows, every
        later one streams with a higher commit LSN and wins), so the stream need not stop for the result
        to equal the tables. A task stopped during it does not resume it (send the signal again)."""
        self._blocking_queue.extend(collections)
        log.info("Signal %r: blocking snapshot of %s queued", signal_id, ", ".join(c.id for c in collections))

    def _blocking_reads(self, collections: list[Collection]) -> None:
        conn = self._db()
        for oid in self.schema.types.types if self.schema is not None else ():
            conn.adapters.register_loader(oid, _RawText)
        assert self.emitter is not None and self._last_offset is not None
        offset = {k: v for k, v in self._last_offset.items() if k not in OFFSET_KEYS}
        notify, ids = self.notify_blocking, [c.id for c in collections]
        notify.started()
        current: Collection | None = None
        try:
            for current in collections:
                self._blocking_table(conn, current, offset, ids)
            current = None
            notify.completed()
        except psycopg.Error:
            if current is not None:
                notify.table_failed(current.id)
            notify.aborted()
            raise

    def _blocking_table(self, conn: Any, current: Collection, offset: dict[str, Any], ids: list[str]) -> None:
        """One table of a blocking snapshot: its rows as `r` events ranked at the WAL position before the SELECT."""
        assert self.emitter is not None
        table = self._table(conn, current.id)
        if table is None:
            log.warning("Blocking snapshot of %s skipped: the table does not exist", current.id)
            return
        self.notify_blocking.table_in_progress(current.id, ids)
        lsn = int(conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0])
        # No commit LSN: the rows rank (lsn, 0), below the changes of a transaction whose commit record starts
        # at `lsn` (cdc_spark/decode/sequence.py); ranked (lsn, lsn) they beat those changes.
        pos = {"lsn": lsn, "lsn_commit": None, "tx_id": None, "ts_us": time.time_ns() // 1000}
        schema_name, name = _split(current.id)
        cols = sql.SQL(", ").join(sql.Identifier(c.name) for c in table.value_columns)
        # As Debezium, a blocking snapshot's additional-conditions filter is a whole SELECT.
        query = (
            sql.SQL(current.condition)
            if current.condition
            else sql.SQL("SELECT {} FROM {}").format(cols, sql.Identifier(schema_name, name))
        )
        width = max((c.index for c in table.value_columns), default=-1) + 1
        by_name = {c.name: c.index for c in table.value_columns}
        rows = 0
        with conn.cursor() as cur:
            cur.execute(query)
            targets = [by_name.get(d.name) for d in cur.description or ()]
            for row in cur:
                values: list[object] = [None] * width
                for index, v in zip(targets, row, strict=True):
                    if index is not None:
                        values[index] = v
                self.emitter.read(table, tuple(values), pos, dict(offset), SnapshotRecord.TRUE.value)
                rows += 1
        log.info("Blocking snapshot of %s: %d rows", current.id, rows)
        self.notify_blocking.table_completed(current.id, rows, ids)

    # -- the chunk thread --------------------------------------------------------------------
    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as e:  # never kill the thread: a lost connection is retried
                log.warning("Incremental snapshot: %s; retrying in 1 s", e)
                self._reset_connection()
                self._retry_at = time.monotonic() + 1.0
            self._stop.wait(0.02)

    def tick(self) -> None:
        if self.channels:
            now = time.monotonic()
            if now >= self._next_poll:
                self._next_poll = now + self.signals.poll_interval_s
                for channel in self.channels:
                    for signal in channel.read():
                        with self.lock:
                            self.processor.process(signal)
        with self.lock:
            blocking, self._blocking_queue = self._blocking_queue, []
        if blocking:
            if self._last_offset is None:
                with self.lock:  # no streamed record yet to resume from: wait for one
                    self._blocking_queue = blocking + self._blocking_queue
            else:
                self._blocking_reads(blocking)
        with self.lock:
            ctx = self.ctx
            ready = ctx.running and not ctx.paused and ctx.chunk_id is None and time.monotonic() >= self._retry_at
            current = ctx.current
        ready = ready and self._drained()
        if ready and current is not None:
            self._read_chunk(current)

    def _drained(self) -> bool:
        """The queue is down to less than a poll batch (or a chunk): the last chunk's rows are (mostly) out, and a
        change streamed now waits behind at most that and the next chunk, however slow the pipeline is."""
        queue = self._queue
        return queue is None or len(queue) < max(queue.max_batch_size, self.signals.chunk_size)

    def _db(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(**self.dsn, autocommit=True)
        return self._conn

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

    def _done_with(self, current: Collection, status: str) -> None:
        with self.lock:
            if self.ctx.current is current:
                self.ctx.next_collection()
            self.notify.table_done(self.ctx, current.id, status)

    def _read_chunk(self, current: Collection) -> None:
        conn = self._db()
        table = self._table(conn, current.id)
        if table is None:
            log.warning("Incremental snapshot of %s skipped: the table does not exist", current.id)
            self._done_with(current, UNKNOWN_SCHEMA)
            return
        key_names = [c.name for c in table.key_columns]
        order = [current.surrogate_key] if current.surrogate_key else key_names
        if not key_names:
            log.warning(
                "Incremental snapshot of %s skipped: the table has no primary key; set message.key.columns for it "
                "(and a surrogate-key in the signal) to snapshot it incrementally",
                current.id,
            )
            self._done_with(current, NO_PRIMARY_KEY)
            return
        schema_name, name = _split(current.id)
        relation = sql.Identifier(schema_name, name)
        cols = sql.SQL(", ").join(sql.Identifier(c) for c in order)
        cond = sql.SQL(" AND ({})").format(sql.SQL(current.condition)) if current.condition else sql.SQL("")
        for oid in self.schema.types.types if self.schema is not None else ():
            conn.adapters.register_loader(oid, _RawText)
        try:
            with self.lock:
                maximum = self.ctx.maximum_key
            if maximum is None:
                desc = sql.SQL(", ").join(sql.SQL("{} DESC").format(sql.Identifier(c)) for c in order)
                top = conn.execute(
                    sql.SQL("SELECT {} FROM {} WHERE true{} ORDER BY {} LIMIT 1").format(cols, relation, cond, desc)
                ).fetchone()
                if top is None:
                    log.info("Incremental snapshot of %s: the table is empty", current.id)
                    self._done_with(current, EMPTY)
                    return
                maximum = tuple(top)
                with self.lock:
                    if self.ctx.current is not current:
                        return  # stopped meanwhile
                    self.ctx.maximum_key = maximum
            chunk_id = str(uuid.uuid4())
            with self.lock:
                if self.ctx.current is not current or self.ctx.paused:
                    return
                last = self.ctx.last_key
                self.ctx.begin_chunk(chunk_id)
            self._watermark(conn, chunk_id, "open", current.id)
            marks = sql.SQL(", ").join(sql.Placeholder() * len(order))
            where = sql.SQL("({}) <= ({})").format(cols, marks)
            args: list[Any] = list(maximum)
            if last is not None:
                where = sql.SQL("({}) > ({}) AND {}").format(cols, marks, where)
                args = [*last, *args]
            size = self.signals.chunk_size
            values_cols = sql.SQL(", ").join(sql.Identifier(c.name) for c in table.value_columns)
            order_by = sql.SQL(", ").join(sql.Identifier(c) for c in order)
            # The chunk query has parameters, so psycopg reads `%` as a placeholder: a filter's own `%`
            # (a LIKE pattern, a key literal holding one) is doubled; the maximum's query above has none.
            cond_args = (
                sql.SQL(" AND ({})").format(sql.SQL(current.condition.replace("%", "%%")))
                if current.condition
                else sql.SQL("")
            )
            query = sql.SQL("SELECT {}, {} FROM {} WHERE {}{} ORDER BY {} LIMIT {}").format(
                values_cols, cols, relation, where, cond_args, order_by, sql.Literal(size)
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
            with self.lock:
                if self.ctx.chunk_id != chunk_id:
                    return  # stopped meanwhile
                self.ctx.set_rows(rows, end, len(fetched) >= size)
            self._watermark(conn, chunk_id, "close", current.id)
        except (psycopg.OperationalError, psycopg.InterfaceError):
            with self.lock:
                self.ctx.forget_chunk()
            raise
        except psycopg.Error as e:
            log.warning(
                "Incremental snapshot of %s skipped: its chunk query failed (%s); check the signal's "
                "additional-conditions filter and the table",
                current.id, str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__,
            )  # fmt: skip
            self._done_with(current, SQL_EXCEPTION)

    def _watermark(self, conn: psycopg.Connection, chunk_id: str, which: str, table_id: str) -> None:
        if self.read_only:
            self._xid_watermark(conn, chunk_id, which)
            return
        schema_name, name = _split(self.signals.data_collection or "")
        relation = sql.Identifier(schema_name, name)
        if which == "close" and self.signals.watermarking == "insert_delete":
            conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s").format(relation), (f"{chunk_id}-open",))
            return
        kind = signal_types.WINDOW_OPEN if which == "open" else signal_types.WINDOW_CLOSE
        meta = json.dumps({f"{which}WindowTimestamp": time.time(), "dataCollectionId": table_id})
        conn.execute(
            sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(relation), (f"{chunk_id}-{which}", kind, meta)
        )

    # -- read.only=true: pg_current_snapshot() watermarks ----------------------------------------
    def _xid_watermark(self, conn: psycopg.Connection, chunk_id: str, which: str) -> None:
        """Low: the snapshot before the SELECT; high: the one after it, with the WAL position (chunk thread)."""
        row = conn.execute(WATERMARK_QUERY).fetchone()
        assert row is not None
        snapshot = PgSnapshot.parse(str(row[0]))
        with self.lock:
            if which == "open":
                self._xid_window = XidWindow(chunk_id, snapshot)
                return
            window = self._xid_window
            if window is not None and window.chunk_id == chunk_id:
                window.high, window.high_lsn = snapshot, int(row[1]) if row[1] is not None else None

    def _xid_window_of_chunk(self) -> XidWindow | None:
        window = self._xid_window
        if window is not None and window.chunk_id != self.ctx.chunk_id:
            self._xid_window = window = None  # the chunk was stopped or failed
        return window

    def _xid_step(self, pos: dict[str, Any], offset: dict[str, Any]) -> None:
        """A streamed row (reader thread): a transaction running at the low watermark opens the window, one
        running at the high watermark closes it before its changes."""
        xid = pos.get("tx_id")
        if xid is None:
            return
        with self.lock:
            window = self._xid_window_of_chunk()
            if window is None:
                return
            if not self.ctx.window_open and window.opens(int(xid)):
                self.ctx.window_open = True
            if window.closes(int(xid)):
                # The rows rank at this transaction's commit LSN just below its first change, and their
                # offset resumes at that change (as a transaction's BEGIN record does).
                rows_pos = {**pos, "lsn": int(pos["lsn"]) - 1}
                events = int(offset.get("lsn_events_processed") or 1)
                self._xid_close(rows_pos, {**offset, "lsn_events_processed": events - 1})

    def _xid_reached(self) -> None:
        """After a commit or an idle read (reader thread): the stream has passed the high watermark's WAL position."""
        streaming = self._streaming
        if self._xid_window is None or streaming is None or streaming._tx is not None:
            return
        lsn = max(streaming.last_received_lsn, streaming.last_commit_lsn or 0)
        with self.lock:
            window = self._xid_window_of_chunk()
            if window is None or not window.reached(lsn):
                return
            # The rows rank (lsn, 0): above every transaction streamed so far (their commit records start
            # below `lsn`, the end of the last record sent) and below every later one, including one whose
            # commit record starts exactly at `lsn` (its changes have lower LSNs: ranked (lsn, lsn), the rows
            # beat them and a stale chunk row won in the lake).
            pos = {"lsn": lsn, "lsn_commit": None, "tx_id": None, "ts_us": time.time_ns() // 1000}
            offset = {"lsn_proc": lsn, "lsn": lsn, "lsn_commit": lsn, "lsn_events_processed": 0,
                      "ts_usec": pos["ts_us"]}  # fmt: skip
            self._xid_close(pos, offset)

    def _xid_close(self, pos: dict[str, Any], offset: dict[str, Any]) -> None:
        self._xid_window = None
        self.ctx.window_open = True  # a window no change opened holds no transaction to deduplicate
        self._close_window(pos, offset)
