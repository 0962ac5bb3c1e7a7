"""MySqlIncrementalSnapshot: signals and the DBLog incremental snapshot for MySQL/MariaDB.

Debezium's SignalBasedIncrementalSnapshotChangeEventSource (MySQL flavour): chunks of
`incremental.snapshot.chunk.size` rows in primary-key order, each read between a low and a
high watermark written to the signal table (`signal.data.collection`), with the
`insert_insert` or `insert_delete` strategy. The binlog stream sees the watermarks: a
streamed change to a buffered key inside the window drops that key's row, and at the high
watermark the rest is emitted as `op: r` with `source.snapshot: incremental`.

Chunk queries let the database compare keys in its own collation and type order, with a row
constructor: `WHERE (k1, k2) > (%s, %s) AND (k1, k2) <= (%s, %s) ORDER BY k1, k2 LIMIT n`.

With `read.only=true` (Debezium's MySqlReadOnlyIncrementalSnapshotChangeEventSource) nothing is written:
the watermarks are the executed GTID sets read before and after the chunk SELECT (incremental_read_only.py)
and the window is kept from the streamed changes' GTIDs; the file and kafka channels drive it, and the
signal table, if set, is still read (signals inserted by someone else, as Debezium allows).

Streamed changes are not held back by the snapshot (issue 22): with signal-table watermarks the chunk's
low watermark, SELECT and high watermark run on the chunk thread with their own connection, so the binlog
keeps streaming while a window is open (as Debezium's does: changes to rows not in the chunk go out at
once), and a lock makes the chunk's rows registering atomic with the stream's de-duplication. The next
chunk starts only once the last one's rows have been taken by a poll: a poll batch holds at most one
chunk, and a change streamed after it waits for that chunk's rows, not for several. The read.only GTID
watermarks still read the chunk on the task thread (the window follows the stream's GTIDs there).

How it plugs in (only when a signal channel is enabled; otherwise nothing of this runs):
the streaming source decodes the signal table too (`captures`), the dispatcher's `change`
is wrapped (`attach`), and the task calls `tick()` from `poll()` to poll the file/kafka
channels and start the next chunk.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import pymysql
import pymysql.cursors

from cdc.api import Struct
from cdc_debezium.envelope import Operation
from cdc_debezium.notifications import (
    EMPTY,
    NO_PRIMARY_KEY,
    SQL_EXCEPTION,
    UNKNOWN_SCHEMA,
    IncrementalSnapshotNotifier,
    InitialSnapshotNotifier,
)
from cdc_debezium.signals import record as signal_types
from cdc_debezium.signals.channels import open_channels
from cdc_debezium.signals.config import SignalConfig
from cdc_debezium.signals.incremental import (
    COLLECTIONS,
    OFFSET_KEYS,
    PRIMARY_KEY,
    Collection,
    IncrementalSnapshotContext,
)
from cdc_debezium.signals.processor import SignalProcessor
from cdc_debezium.signals.record import SignalRecord
from cdc_debezium.source_info import SnapshotRecord
from cdc_mysql.catalog import read_tables
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.connection import MySqlConnection
from cdc_mysql.dispatcher import EventDispatcher
from cdc_mysql.incremental_read_only import GtidSet, GtidWindow, check_gtids, parse_gtid, read_executed
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_mysql.schema import MySqlSchema, TableSchema
from cdc_mysql.snapshot import captured_tables
from cdc_mysql.source_info import SourceInfo

log = logging.getLogger(__name__)


def _q(ident: str) -> str:
    return "`" + ident.replace("`", "``") + "`"


def _split(table_id: str) -> tuple[str, str]:
    db, _, name = table_id.partition(".")
    return db, name


@dataclass(frozen=True)
class _Chunk:
    """One chunk's read, planned on the task thread: its SELECT with the bounds bound, the key order."""

    id: str
    collection: Collection
    ts: TableSchema
    order: list[str]
    query: str
    args: list[Any]
    size: int


def key_of(ts: TableSchema, row: dict[str, Any]) -> Any:
    """The message key's values, hashable: what a streamed change and a chunk row are matched by."""
    key = ts.key(row)
    if key is None:
        return None
    values = tuple(key._values)
    try:
        hash(values)
    except TypeError:
        return repr(values)
    return values


class MySqlIncrementalSnapshot:
    """Signals (source, file, kafka channels) and the incremental snapshot of one MySQL task."""

    def __init__(
        self,
        config: MySqlConnectorConfig,
        signals: SignalConfig,
        connection: MySqlConnection,
        schema: MySqlSchema,
        source_info: SourceInfo,
        dispatcher: EventDispatcher,
        is_mariadb: bool,
        task_context: Any,
        stored: dict[str, Any] | None,
    ) -> None:
        self.config = config
        self.signals = signals
        self.connection = connection
        self.schema = schema
        self.source_info = source_info
        self.dispatcher = dispatcher
        self.is_mariadb = is_mariadb
        self.ctx = IncrementalSnapshotContext.load(stored)
        self.offset: MySqlOffsetContext | None = None
        self.processor = SignalProcessor(self, lambda: self.offset.offset() if self.offset else None)
        self.channels = open_channels(signals, task_context, config.topic_prefix)
        table = signals.data_collection
        self.signal_table = table.lower() if table else None
        self._conn: pymysql.connections.Connection | None = None
        self._next_poll = 0.0
        self._retry_at = 0.0
        self._blocking_queue: list[Collection] = []
        self._schema_cache: tuple[str, TableSchema] | None = None
        self._blocking: Iterator[None] | None = None
        self._forward: Callable[..., None] = dispatcher.change
        self.rows_emitted = 0
        self.chunks = 0
        self.notify = IncrementalSnapshotNotifier(_props(task_context), config.topic_prefix, dispatcher._put)
        # A blocking snapshot reports as Debezium's does, with the Initial Snapshot notifications.
        self.notify_blocking = InitialSnapshotNotifier(_props(task_context), config.topic_prefix, dispatcher._put)
        # read.only=true: GTID-set watermarks (incremental_read_only.py), the open chunk's window
        self.read_only: bool = config.read_only
        self._gtid_window: GtidWindow | None = None
        self._streaming: Any = None
        # The open chunk's timeline for the DEBUG line at its close (time.perf_counter marks).
        self._timing: dict[str, float] = {}
        self._last_close = time.perf_counter()
        # The chunk thread (signal-table watermarks): its own connection, the read in flight. The lock makes
        # registering the chunk's rows atomic with the stream's de-duplication and with stop-snapshot.
        self._lock = threading.Lock()
        self._reading: tuple[_Chunk, Future[None]] | None = None
        self._chunk_conn: pymysql.connections.Connection | None = None
        # Pacing: the next chunk starts once the last one's rows have been taken from the buffer (the
        # dispatcher's count of taken records reached this), so a poll batch holds at most one chunk
        # ahead of the changes streamed after it.
        self._drain_mark = 0
        if self.ctx.running:
            log.info(
                "Resuming the incremental snapshot of %s after key %s",
                ", ".join(c.id for c in self.ctx.collections), self.ctx.last_key,
            )  # fmt: skip

    # -- wiring ------------------------------------------------------------------------------
    def attach(self, streaming: Any) -> None:
        """Hooks into the streaming source before it starts: the signal table is decoded, changes pass here."""
        self.offset = streaming.offset
        if self.ctx.running:
            self.ctx.keep_captured(self.captured_collections())
        self._sync()
        if self.read_only:
            self._streaming = streaming
            with self._db().cursor() as cur:
                check_gtids(cur, self.is_mariadb, f"{self.config.hostname}:{self.config.port}")
        base = streaming.captures_table
        if self.signal_table is not None:
            streaming.captures_table = lambda db, t: base(db, t) or f"{db}.{t}".lower() == self.signal_table
        self.dispatcher.change = self._change  # type: ignore[method-assign]

    def close(self) -> None:
        if self._reading is not None:
            try:
                self._reading[1].result(timeout=10)
            except Exception as e:
                log.debug("the chunk read in flight at close: %s", e)
            self._reading = None
        for channel in self.channels:
            closer = getattr(channel, "close", None)
            if closer is not None:
                closer()
        self._reset_connection()

    def _sync(self) -> None:
        if self.offset is not None:
            self.offset.incremental = self.ctx.offset()

    # -- the stream's changes ----------------------------------------------------------------
    def _change(
        self,
        op: Operation,
        ts: TableSchema,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        source: Struct,
        offset: dict[str, Any],
        tx_id: str | None,
    ) -> None:
        table_id = ts.table.id
        ctx = self.ctx
        if self._gtid_window is not None:
            self._gtid_step(source, offset)
        if self.signal_table is not None and table_id.lower() == self.signal_table:
            self._signal_row(op, before, after, source, offset)
            if not self.config.captures_table(ts.table.db, ts.table.name):
                return
        elif ctx.window_open and (current := ctx.current) is not None and current.id.lower() == table_id.lower():
            with self._lock:
                if before is not None:
                    ctx.deduplicate(key_of(ts, before))
                if after is not None:
                    ctx.deduplicate(key_of(ts, after))
        state = self.offset.incremental if self.offset is not None else {}
        if offset.get(PRIMARY_KEY) != state.get(PRIMARY_KEY) or offset.get(COLLECTIONS) != state.get(COLLECTIONS):
            # The state moved on inside this rows event (a window closed): later rows carry the new one.
            offset = {k: v for k, v in offset.items() if k not in OFFSET_KEYS}
            offset.update(state)
        self._forward(op, ts, before, after, source, offset, tx_id)

    def _signal_row(
        self,
        op: Operation,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        source: Struct,
        offset: dict[str, Any],
    ) -> None:
        ctx = self.ctx
        if op == Operation.DELETE and before is not None:
            if (
                self.signals.watermarking == "insert_delete"
                and ctx.chunk_id
                and _text(before, 0) == f"{ctx.chunk_id}-open"
            ):
                self._close_window(source, offset)
            return
        if op != Operation.CREATE or after is None:
            return
        signal_id, kind = _text(after, 0) or "", _text(after, 1) or ""
        if kind == signal_types.WINDOW_OPEN:
            if ctx.chunk_id and signal_id == f"{ctx.chunk_id}-open":
                ctx.window_open = True
            return
        if kind == signal_types.WINDOW_CLOSE:
            if ctx.chunk_id and signal_id == f"{ctx.chunk_id}-close":
                self._close_window(source, offset)
            return
        if "source" in self.signals.channels:
            self.processor.process(SignalRecord(signal_id, kind, _text(after, 2), "source"))

    def _close_window(self, source: Struct, offset: dict[str, Any]) -> None:
        ctx = self.ctx
        if not ctx.window_open:
            log.warning(
                "Incremental snapshot chunk %s: high watermark without a low one; reading it again", ctx.chunk_id
            )
            ctx.forget_chunk()
            return
        # Every row but the last carries the offset from before this chunk: a task stopped after part of
        # the chunk is durable reads the whole chunk again; the last row's offset moves past it.
        before = {k: v for k, v in offset.items() if k not in OFFSET_KEYS}
        before.update(ctx.offset())
        table_id = ctx.current.id if ctx.current is not None else ""
        t_seen = time.perf_counter()
        with self._lock:
            rows = ctx.close_window()
        self._sync()
        after = {k: v for k, v in offset.items() if k not in OFFSET_KEYS}
        after.update(ctx.offset())
        file, pos, row = source.get("file"), source.get("pos"), source.get("row")
        ts_ms = int(time.time() * 1000)
        last = len(rows) - 1
        read = self.dispatcher.read
        src, src_table = None, None
        for i, (ts, values) in enumerate(rows):
            if ts.table is not src_table:  # one source block for the chunk's rows: they differ in nothing
                src_table = ts.table
                src = self.source_info.struct(
                    ts_ms=ts_ms, db=ts.table.db, table=ts.table.name, server_id=0, file=file, pos=pos, row=row,
                    snapshot=SnapshotRecord.INCREMENTAL,
                )  # fmt: skip
            read(ts, values, src, after if i == last else before)
        self._drain_mark = self.dispatcher.events + len(self.dispatcher.buffer)
        self.rows_emitted += len(rows)
        self.chunks += 1
        self.notify.chunk(ctx, table_id, len(rows))
        self._log_timing(t_seen, len(rows))
        if not ctx.running:
            log.info("Incremental snapshot completed (%d rows in %d chunks)", self.rows_emitted, self.chunks)

    # -- SnapshotControl (the signal actions) ------------------------------------------------
    def captured_collections(self) -> list[str]:
        return [f"{db}.{t}" for db, t in captured_tables(self._db(), self.config)]

    def add_collections(self, collections: list[Collection], signal_id: str) -> None:
        if self.signal_table is None and not self.read_only:
            log.warning(
                "Signal %r: an incremental snapshot needs signal.data.collection (the table its watermarks are "
                "written to); set it and send the signal again; ignored",
                signal_id,
            )
            return
        added = self.ctx.add(collections, signal_id)
        self._sync()
        self.notify.started(self.ctx, signal_id, [c.id for c in added])
        log.info(
            "Signal %r: incremental snapshot of %s queued%s",
            signal_id, ", ".join(c.id for c in added) or "(already queued)",
            "" if not self.ctx.paused else " (paused: send resume-snapshot)",
        )  # fmt: skip

    def stop_collections(self, ids: set[str] | None, signal_id: str) -> None:
        with self._lock:
            dropped = self.ctx.remove(ids)
        self._sync()
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

    # -- polled work ---------------------------------------------------------------------------
    def tick(self) -> bool:
        """From the task's poll loop: read the polled channels every signal.poll.interval.ms; start the
        next chunk when none is in flight. True while a blocking snapshot runs: the binlog waits."""
        if self._blocking is not None:
            try:
                next(self._blocking)
                return True
            except StopIteration:
                self._blocking = None
            except pymysql.err.MySQLError as e:
                log.warning("Blocking snapshot failed (%s); streaming resumes without the rest of it", e)
                self._blocking = None
        if self.channels:
            now = time.monotonic()
            if now >= self._next_poll:
                self._next_poll = now + self.signals.poll_interval_s
                for channel in self.channels:
                    for signal in channel.read():
                        self.processor.process(signal)
        ctx = self.ctx
        if self._gtid_window is not None:
            self._gtid_reached()
        if self._collect():
            return False  # the chunk thread still writes the watermarks or reads the rows
        if (
            ctx.running
            and not ctx.paused
            and ctx.chunk_id is None
            and time.monotonic() >= self._retry_at
            and self.dispatcher.events >= self._drain_mark
        ):
            self._read_chunk()
            if self._gtid_window is not None:
                self._gtid_chunks()
        if self._blocking_queue and self._blocking is None:
            collections, self._blocking_queue = self._blocking_queue, []
            self._blocking = self._blocking_reads(collections)
        return False

    # -- blocking snapshots ----------------------------------------------------------------------
    def blocking_snapshot(self, collections: list[Collection], signal_id: str) -> None:
        """Debezium's blocking snapshot: streaming waits while the tables are read, then goes on from
        where it stopped. The rows rank at the stream's position when it paused, so every change streamed
        afterwards wins over them and the result converges to the tables; a task stopped during it does
        not resume it (send the signal again)."""
        self._blocking_queue.extend(collections)
        log.info("Signal %r: blocking snapshot of %s queued", signal_id, ", ".join(c.id for c in collections))

    def _blocking_reads(self, collections: list[Collection]) -> Iterator[None]:
        assert self.offset is not None
        offset = self.offset.offset()
        file, pos = self.offset.file, self.offset.pos
        notify, ids = self.notify_blocking, [c.id for c in collections]
        notify.started()
        current: Collection | None = None
        conn = self.connection.connect(autocommit=True, cursorclass=pymysql.cursors.SSCursor)
        try:
            with conn.cursor() as cur:
                cur.execute("SET SESSION time_zone = '+00:00'")
            for current in collections:
                ts = self._table_schema(current.id)
                if ts is None:
                    log.warning("Blocking snapshot of %s skipped: the table does not exist", current.id)
                    continue
                notify.table_in_progress(current.id, ids)
                db, name = _split(current.id)
                # As Debezium, a blocking snapshot's additional-conditions filter is a whole SELECT.
                query = current.condition or f"SELECT * FROM {_q(db)}.{_q(name)}"
                rows = 0
                with conn.cursor() as cur:
                    cur.execute(query)
                    names = [d[0] for d in cur.description or ()]
                    while batch := cur.fetchmany(1024):
                        ts_ms = int(time.time() * 1000)
                        for values in batch:
                            src = self.source_info.struct(
                                ts_ms=ts_ms, db=db, table=name, server_id=0, file=file, pos=pos,
                                snapshot=SnapshotRecord.TRUE,
                            )  # fmt: skip
                            self.dispatcher.read(ts, dict(zip(names, values, strict=False)), src, offset)
                        rows += len(batch)
                        yield
                log.info("Blocking snapshot of %s: %d rows", current.id, rows)
                notify.table_completed(current.id, rows, ids)
            current = None
            notify.completed()
        except pymysql.err.MySQLError:
            if current is not None:
                notify.table_failed(current.id)
            notify.aborted()
            raise
        finally:
            conn.close()

    def _db(self) -> pymysql.connections.Connection:
        if self._conn is None or not self._conn.open:
            self._conn = self.connection.connect(autocommit=True)
            with self._conn.cursor() as cur:
                cur.execute("SET SESSION time_zone = '+00:00'")
        return self._conn

    def _table_schema(self, table_id: str, cached: bool = False) -> TableSchema | None:
        """The table as information_schema has it; `cached`: read once per snapshot of the table (its
        chunks share it, as Debezium's do without incremental.snapshot.allow.schema.changes)."""
        if cached and self._schema_cache is not None and self._schema_cache[0] == table_id:
            return self._schema_cache[1]
        found = read_tables(self._db(), [_split(table_id)], self.is_mariadb)
        if not found:
            return None
        table, meta = found[0]
        self.schema.set_meta(table, meta)
        ts = self.schema.schema_for(table)
        self._schema_cache = (table_id, ts)
        return ts

    def _read_chunk(self) -> None:
        """Plans the next chunk (its table's definition and maximum key, read here at the table's first chunk)
        and reads it: on the chunk thread with signal-table watermarks, so the binlog keeps streaming while
        the watermarks are written and the SELECT runs (as Debezium's stream does while a window is open);
        inline with read.only GTID watermarks."""
        ctx = self.ctx
        current = ctx.current
        assert current is not None
        try:
            ts = self._table_schema(current.id, cached=ctx.last_key is not None)
        except pymysql.err.MySQLError as e:
            log.warning("Incremental snapshot of %s skipped: its definition cannot be read (%s)", current.id, e)
            ts = None
        if ts is None:
            log.warning("Incremental snapshot of %s skipped: the table does not exist", current.id)
            self._done_with(current, UNKNOWN_SCHEMA)
            return
        key_names = [name for name, _ in ts.key_columns]
        order = [current.surrogate_key] if current.surrogate_key else key_names
        if not key_names or not order:
            log.warning(
                "Incremental snapshot of %s skipped: the table has no primary key; set message.key.columns for it "
                "(and a surrogate-key in the signal) to snapshot it incrementally",
                current.id,
            )
            self._done_with(current, NO_PRIMARY_KEY)
            return
        db, name = _split(current.id)
        table = f"{_q(db)}.{_q(name)}"
        cols = ", ".join(_q(c) for c in order)
        cond = f" AND ({current.condition})" if current.condition else ""
        try:
            if ctx.maximum_key is None:
                desc = ", ".join(f"{_q(c)} DESC" for c in order)
                with self._db().cursor() as cur:
                    cur.execute(f"SELECT {cols} FROM {table} WHERE 1=1{cond} ORDER BY {desc} LIMIT 1")
                    top = cur.fetchone()
                if top is None:
                    log.info("Incremental snapshot of %s: the table is empty", current.id)
                    self._done_with(current, EMPTY)
                    return
                ctx.maximum_key = tuple(top)
                self._sync()
        except pymysql.err.MySQLError as e:
            self._chunk_failed(current, None, e)
            return
        marks = ", ".join(["%s"] * len(order))
        where, args = f"({cols}) <= ({marks})", list(ctx.maximum_key)
        if ctx.last_key is not None:
            where, args = f"({cols}) > ({marks}) AND {where}", [*ctx.last_key, *args]
        asc = ", ".join(_q(c) for c in order)
        size = self.signals.chunk_size
        query = f"SELECT * FROM {table} WHERE {where}{cond.replace('%', '%%')} ORDER BY {asc} LIMIT {size}"
        chunk = _Chunk(str(uuid.uuid4()), current, ts, order, query, args, size)
        ctx.begin_chunk(chunk.id)
        self._timing = {"last": self._last_close, "start": time.perf_counter()}
        if self.read_only:
            try:
                self._read_window(self._db(), chunk)
            except pymysql.err.MySQLError as e:
                self._chunk_failed(current, chunk.id, e)
            return
        future: Future[None] = Future()

        def read() -> None:
            try:
                self._read_window(None, chunk)
            except BaseException as e:  # handed to the task thread by _collect()
                future.set_exception(e)
            else:
                future.set_result(None)

        # A daemon thread per chunk (a thread costs far less than a chunk): a read hung on the database
        # does not keep the process from exiting.
        self._reading = (chunk, future)
        threading.Thread(target=read, name="mysql-incremental-snapshot", daemon=True).start()

    def _collect(self) -> bool:
        """From tick(): True while the chunk thread still reads; a read that failed is handled here."""
        if self._reading is None:
            return False
        chunk, future = self._reading
        if not future.done():
            return True
        self._reading = None
        error = future.exception()
        if isinstance(error, pymysql.err.MySQLError):
            self._chunk_failed(chunk.collection, chunk.id, error)
        elif error is not None:
            raise error
        return False

    def _read_window(self, conn: pymysql.connections.Connection | None, chunk: _Chunk) -> None:
        """Low watermark, the chunk's SELECT, its rows registered, high watermark (the chunk thread, when
        `conn` is None, on its own connection: the task thread's may run a signal's query meanwhile)."""
        if conn is None:
            conn = self._chunk_db()
        timing = self._timing
        with conn.cursor() as cur:
            self._watermark(cur, chunk.id, "open", chunk.collection.id)
            timing["open"] = time.perf_counter()
            cur.execute(chunk.query, chunk.args)
            names = [d[0] for d in cur.description or ()]
            fetched = cur.fetchall()
            timing["select"] = time.perf_counter()
            ts, order = chunk.ts, chunk.order
            rows: dict[Any, Any] = {}
            end = None
            for values in fetched:
                row = dict(zip(names, values, strict=False))
                rows[key_of(ts, row)] = (ts, row)
                end = tuple(row[c] for c in order)
            with self._lock:
                if self.ctx.chunk_id != chunk.id:
                    return  # stopped meanwhile (stop-snapshot): no high watermark, the rows are dropped
                self.ctx.set_rows(rows, end, len(fetched) >= chunk.size)
            timing["rows"] = time.perf_counter()
            self._watermark(cur, chunk.id, "close", chunk.collection.id)
            timing["close"] = time.perf_counter()

    def _chunk_failed(self, current: Collection, chunk_id: str | None, e: pymysql.err.MySQLError) -> None:
        code = e.args[0] if e.args and isinstance(e.args[0], int) else None
        if code in _ACCESS_DENIED:
            # Retrying cannot help (PyMySQL reports these as OperationalError, like a lost connection).
            log.error(
                "Incremental snapshot of %s stopped: the connector's user may not do what a chunk needs (%s); "
                "grant it SELECT on the table and INSERT, DELETE on %s (the watermarks), or set read.only=true, "
                "then send the signal again",
                current.id, e, self.signals.data_collection or "signal.data.collection",
            )  # fmt: skip
            with self._lock:
                if chunk_id is None or self.ctx.chunk_id == chunk_id:
                    self.ctx.forget_chunk()
            self._done_with(current, SQL_EXCEPTION)
            return
        if isinstance(e, pymysql.err.OperationalError | pymysql.err.InterfaceError):
            log.warning("Incremental snapshot chunk of %s failed (%s); retrying in 1 s", current.id, e)
            self._reset_connection()
            with self._lock:
                if chunk_id is None or self.ctx.chunk_id == chunk_id:
                    self.ctx.forget_chunk()
            self._retry_at = time.monotonic() + 1.0
            return
        # Debezium's TABLE_SCAN_COMPLETED with status SQL_EXCEPTION: the table is skipped.
        log.warning(
            "Incremental snapshot of %s skipped: its chunk query failed (%s); check the signal's "
            "additional-conditions filter and the table",
            current.id, e,
        )  # fmt: skip
        self._done_with(current, SQL_EXCEPTION)

    def _log_timing(self, t_seen: float, emitted: int) -> None:
        """One DEBUG line per chunk: where its time went, from the read's start to its rows in the buffer."""
        t, self._timing = self._timing, {}
        if not t or not log.isEnabledFor(logging.DEBUG):
            return
        ms = lambda a, b: (t.get(b, 0.0) - t.get(a, 0.0)) * 1000  # noqa: E731
        now = time.perf_counter()
        log.debug(
            "chunk %s: since last close %.0f ms, low watermark %.1f ms, select %.1f ms, rows %.1f ms, high watermark "
            "%.1f ms, high watermark seen %.0f ms later, %d rows emitted in %.1f ms, buffer %d",
            self.chunks, ms("last", "start"), ms("start", "open"), ms("open", "select"), ms("select", "rows"),
            ms("rows", "close"), (t_seen - t.get("close", t_seen)) * 1000, emitted, (now - t_seen) * 1000,
            len(self.dispatcher.buffer),
        )  # fmt: skip
        self._last_close = now

    def _watermark(self, cur: Any, chunk_id: str, which: str, table_id: str) -> None:
        """Writes the low (`open`) or high (`close`) watermark to the signal table."""
        if self.read_only:
            self._gtid_watermark(cur, chunk_id, which)
            return
        assert self.signal_table is not None
        db, name = _split(self.signals.data_collection or "")
        signal_table = f"{_q(db)}.{_q(name)}"
        if which == "close" and self.signals.watermarking == "insert_delete":
            cur.execute(f"DELETE FROM {signal_table} WHERE {_q('id')} = %s", (f"{chunk_id}-open",))
            return
        kind = signal_types.WINDOW_OPEN if which == "open" else signal_types.WINDOW_CLOSE
        meta = json.dumps({f"{which}WindowTimestamp": time.time(), "dataCollectionId": table_id})
        cur.execute(f"INSERT INTO {signal_table} VALUES (%s, %s, %s)", (f"{chunk_id}-{which}", kind, meta))

    # -- read.only=true: GTID-set watermarks ----------------------------------------------------
    def _gtid_watermark(self, cur: Any, chunk_id: str, which: str) -> None:
        """Low: the executed set, then the SELECT's consistent snapshot; high: the set after it."""
        if which == "open":
            self._gtid_window = GtidWindow(chunk_id, read_executed(cur, self.is_mariadb))
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            return
        cur.execute("COMMIT")
        window = self._gtid_window
        if window is not None and window.chunk_id == chunk_id:
            window.high = read_executed(cur, self.is_mariadb)

    def _gtid_window_of_chunk(self) -> GtidWindow | None:
        window = self._gtid_window
        if window is not None and window.chunk_id != self.ctx.chunk_id:
            self._gtid_window = window = None  # the chunk was stopped or failed
        return window

    def _gtid_step(self, source: Struct, offset: dict[str, Any]) -> None:
        """A streamed change: past the low set it opens the window, past the high set it closes it."""
        window = self._gtid_window_of_chunk()
        gtid = source.get("gtid")
        if window is None or not gtid:
            return
        src, seq = parse_gtid(str(gtid), self.is_mariadb)
        if not self.ctx.window_open and window.opens(src, seq):
            self.ctx.window_open = True
        if window.closes(src, seq) and self.offset is not None:
            # The rows rank at this transaction's start (its GTID event), below its changes, and their
            # offset resumes at this change, which follows them.
            off = self.offset
            resume = dict(offset)
            resume["row"] = max(int(offset.get("row") or 0) - 1, 0)
            self._gtid_close({"file": off.file, "pos": off.pos, "row": 0}, resume)  # type: ignore[arg-type]

    def _gtid_reached(self) -> bool:
        """From tick(): the stream has executed the high watermark's transactions; the window closes here."""
        window = self._gtid_window_of_chunk()
        if window is None or window.high is None or self._streaming is None or self.offset is None:
            return False
        if not window.reached_by(GtidSet.parse(str(self._streaming.gtid_set), self.is_mariadb)):
            return False
        off = self.offset
        self._gtid_close({"file": off.file, "pos": off.pos, "row": 0}, off.offset())  # type: ignore[arg-type]
        return True

    def _gtid_chunks(self) -> None:
        """Debezium's readUntilGtidChange: while the stream already stands at the chunk's high watermark (nothing
        committed meanwhile), close it and read the next, until the batch is full (poll() then returns)."""
        limit = self.config.max_batch_size
        while len(self.dispatcher.buffer) < limit and self._gtid_reached():
            ctx = self.ctx
            if not ctx.running or ctx.paused or ctx.chunk_id is not None:
                return
            self._read_chunk()

    def _gtid_close(self, source: Struct, offset: dict[str, Any]) -> None:
        window, self._gtid_window = self._gtid_window, None
        if window is not None and window.server_changed():
            # Debezium's rereadChunk: the chunk's rows are dropped and the same key range read again.
            assert window.high is not None
            log.warning(
                "Incremental snapshot chunk %s: another server wrote while it was read (GTID sources %s, then %s: "
                "a failover); reading the chunk again",
                window.chunk_id, _sources(window.low), _sources(window.high),
            )  # fmt: skip
            with self._lock:
                self.ctx.forget_chunk()
            return
        self.ctx.window_open = True  # a window no change opened holds no transaction to deduplicate
        self._close_window(source, offset)

    def _chunk_db(self) -> pymysql.connections.Connection:
        """The chunk thread's connection (only that thread uses it)."""
        if self._chunk_conn is None or not self._chunk_conn.open:
            self._chunk_conn = self.connection.connect(autocommit=True)
            with self._chunk_conn.cursor() as cur:
                cur.execute("SET SESSION time_zone = '+00:00'")
        return self._chunk_conn

    def _reset_connection(self) -> None:
        """After a lost connection (no chunk read is in flight): both are opened again when next used."""
        for conn in (self._conn, self._chunk_conn):
            if conn is not None:
                try:
                    conn.close()
                except Exception as e:
                    log.debug("closing the incremental snapshot connection: %s", e)
        self._conn = self._chunk_conn = None

    def _done_with(self, current: Collection, status: str) -> None:
        if self.ctx.current is current:
            self.ctx.next_collection()
        self._sync()
        self.notify.table_done(self.ctx, current.id, status)


# MySQL/MariaDB error codes of a refused privilege: database, table, column, and a missing global privilege
_ACCESS_DENIED = frozenset({1044, 1142, 1143, 1227})


def _sources(gtids: GtidSet) -> str:
    """A GTID set's sources for a log line: MySQL server UUIDs, MariaDB `domain-server`."""
    return ",".join(f"{s}-{gtids.servers[s]}" if s in gtids.servers else s for s in sorted(gtids.intervals)) or "none"


def _text(row: dict[str, Any], index: int) -> str | None:
    """The signal table's columns are read by position (id, type, data), as Debezium does."""
    values = list(row.values())
    if index >= len(values) or values[index] is None:
        return None
    v = values[index]
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _props(task_context: Any) -> dict[str, str]:
    """The task's config, for the notification.* keys (Kafka Connect's SourceTaskContext.configs())."""
    configs = getattr(task_context, "configs", None)
    return dict(configs()) if callable(configs) else {}
