"""IncrementalSnapshotSource: the DBLog incremental snapshot and the signal actions, written once.

Debezium's AbstractIncrementalSnapshotChangeEventSource (with its read-only variant's window rules): the
connectors subclass it with their database's part, as Debezium's MySQL and PostgreSQL sources do.

Here, for both connectors:

- the chunk loop: the next chunk of `incremental.snapshot.chunk.size` rows of the current collection in key
  order, after the last key read and up to the collection's maximum key (read at its first chunk);
- the window: a low watermark, the chunk's SELECT, its rows registered in the context, a high watermark.
  A streamed change, inside the open window, to a key of the chunk drops that key's row (the stream
  carries a newer or equal value); at the high watermark the rest is emitted as `op: r` with
  `source.snapshot: incremental`. Every row but the last carries the offset from before the chunk, so a
  task stopped after part of it is durable reads the whole chunk again;
- the state and its offsets (IncrementalSnapshotContext, `incremental_snapshot_*` keys): published to the
  connector (`_publish_state`) on every change of what an offset holds, so the next record carries it;
- the signals: the polled channels (file, kafka), the signal table's rows in the stream (the `source`
  channel and the signal-table watermarks), the actions add/stop/pause/resume and blocking snapshots;
- the read-only watermarking skeleton (`read.only=true`, Debezium's ReadOnly...ChangeEventSource): the
  window is opened and closed by the streamed changes' transactions against the watermarks read before
  and after the SELECT, or closed once the stream has passed the high watermark;
- the concurrency: one lock guards the context between the stream, the chunk reads and the signals. The
  connector chooses where the work runs: `tick()` from its poll loop, or a worker thread of this module
  (`_start_worker`), and the chunk's read inline or on a thread of its own (`_reads_on_thread`).

The connector's part (the abstract methods below): its tables, how a chunk and the maximum key are read,
how the watermarks are written (signal-table inserts, or GTID-set / pg_snapshot read-only watermarks), how
rows are emitted and where its positions and offsets stand.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, ClassVar

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
from cdc_debezium.signals.incremental import OFFSET_KEYS, Collection, IncrementalSnapshotContext
from cdc_debezium.signals.processor import SignalProcessor
from cdc_debezium.signals.record import SignalRecord

# How a failed chunk read is handled (`_failure`)
RETRY = "retry"  # a lost connection: the chunk is read again in a second
DENIED = "denied"  # a refused privilege: retrying cannot help, the collection is stopped
SKIP = "skip"  # a failing query (a bad additional-conditions filter): the collection is skipped

Row = Any  # a streamed or read row, as the connector has it (a dict by column, a tuple by position)


def key_of(table: Any, row: Row) -> Any:
    """The message key's values, hashable: what a streamed change and a chunk row are matched by."""
    key = table.key(row)
    if key is None:
        return None
    values = tuple(key._values)
    try:
        hash(values)
    except TypeError:
        return repr(values)
    return values


def task_props(task_context: Any) -> dict[str, str]:
    """The task's config, for the notification.* keys (Kafka Connect's SourceTaskContext.configs())."""
    configs = getattr(task_context, "configs", None)
    return dict(configs()) if callable(configs) else {}


@dataclass(frozen=True)
class Chunk:
    """One chunk's read: the keys after `after` (None: from the first) up to `maximum`, `size` rows at most."""

    id: str
    collection: Collection
    table: Any
    order: list[str]
    after: tuple[Any, ...] | None
    maximum: tuple[Any, ...]
    size: int


class IncrementalSnapshotSource:
    """Signals (source, file, kafka channels) and the incremental snapshot of one task; see the module doc."""

    # the database driver's errors: a chunk read failing with one is handled (`_failure`), others propagate
    db_errors: ClassVar[tuple[type[BaseException], ...]] = ()
    # MySQL compares table names without case (lower_case_table_names); PostgreSQL's quoted names differ by case
    ids_ignore_case: ClassVar[bool] = False
    thread_name: ClassVar[str] = "incremental-snapshot"

    def __init__(
        self,
        signals: SignalConfig,
        topic_prefix: str,
        task_context: Any,
        stored: dict[str, Any] | None,
        read_only: bool,
        emit: Callable[[Any], Any],
    ) -> None:
        self.log = logging.getLogger(type(self).__module__)
        self.signals = signals
        self.read_only = read_only
        self.ctx = IncrementalSnapshotContext.load(stored)
        # Guards the context between the stream, the chunk reads and the signals (re-entrant: an action runs
        # with it held and takes it again).
        self.lock = threading.RLock()
        self.processor = SignalProcessor(self, self._current_offset)
        self.channels = open_channels(signals, task_context, topic_prefix)
        table = signals.data_collection
        self.signal_table = table.lower() if table else None
        props = task_props(task_context)
        self.notify = IncrementalSnapshotNotifier(props, topic_prefix, emit)
        # A blocking snapshot reports as Debezium's does, with the Initial Snapshot notifications.
        self.notify_blocking = InitialSnapshotNotifier(props, topic_prefix, emit)
        self.rows_emitted = 0
        self.chunks = 0
        self._next_poll = 0.0
        self._retry_at = 0.0
        self._blocking_queue: list[Collection] = []
        self._blocking: Iterator[None] | None = None
        # read.only=true: the open chunk's watermarks (a window with `chunk_id`, `opens`, `closes`)
        self._window: Any = None
        # The chunk read on its own thread (`_reads_on_thread`), and the worker thread (`_start_worker`).
        self._reading: tuple[Chunk, Future[None]] | None = None
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()
        # The open chunk's timeline for the DEBUG line at its close (time.perf_counter marks).
        self._timing: dict[str, float] = {}
        self._last_close = time.perf_counter()
        if self.ctx.running:
            self.log.info(
                "Resuming the incremental snapshot of %s after key %s",
                ", ".join(c.id for c in self.ctx.collections), self.ctx.last_key,
            )  # fmt: skip

    # -- the connector's part ------------------------------------------------------------------
    def captured_collections(self) -> list[str]:
        """Every data collection the connector captures now (`db.table` or `schema.table`)."""
        raise NotImplementedError

    def _current_offset(self) -> Any:
        """The stream's offset, for the `log` signal's `{}`."""
        raise NotImplementedError

    def _publish_state(self, state: dict[str, Any]) -> None:
        """The context's offset keys changed: the records from now on carry `state` in their offsets."""
        raise NotImplementedError

    def _captures_signal_table(self, table: Any) -> bool:
        """Is the signal table also a captured table (its changes then go on as data)?"""
        raise NotImplementedError

    def _column(self, row: Row, index: int) -> Any:
        """The signal table's columns are read by position (id, type, data), as Debezium does."""
        raise NotImplementedError

    def _chunk_table(self, current: Collection, cached: bool) -> Any:
        """The collection's table schema (with `.key(row)`), None when it does not exist; `cached`: not its
        first chunk."""
        raise NotImplementedError

    def _key_names(self, table: Any) -> list[str]:
        raise NotImplementedError

    def _max_key(self, current: Collection, order: list[str]) -> tuple[Any, ...] | None:
        """The collection's largest key in `order` (with its additional condition); None: no row."""
        raise NotImplementedError

    def _session(self, threaded: bool) -> AbstractContextManager[Any]:
        """What a chunk's watermarks and SELECT run on (`threaded`: on the chunk thread)."""
        raise NotImplementedError

    def _select_chunk(self, session: Any, chunk: Chunk) -> tuple[dict[Any, Any], tuple[Any, ...] | None, int]:
        """The chunk's rows by key_of (values: what `_emit_rows` takes), the last key read, how many were read."""
        raise NotImplementedError

    def _insert_signal(self, session: Any, values: tuple[str, str, str]) -> None:
        """Inserts a watermark row (id, type, data) into the signal table."""
        raise NotImplementedError

    def _delete_signal(self, session: Any, signal_id: str) -> None:
        raise NotImplementedError

    def _emit_rows(self, rows: list[Any], pos: Any, before: dict[str, Any], after: dict[str, Any]) -> None:
        """The window's rows as `op: r` at stream position `pos`: each with offset `before`, the last `after`."""
        raise NotImplementedError

    def _reset_connection(self) -> None:
        """After a lost connection: the connections are opened again when next used."""
        raise NotImplementedError

    def _reads_on_thread(self) -> bool:
        """Is a chunk read on a thread of its own (the caller of tick() goes on meanwhile)?"""
        return False

    def _drained(self) -> bool:
        """May the next chunk start (the last one's rows have left the connector's buffer)?"""
        return True

    def _backlog(self) -> int:
        """The records waiting in the connector's buffer, for the DEBUG line."""
        return 0

    def _failure(self, error: BaseException) -> str:
        """RETRY, DENIED or SKIP for a chunk read failing with `error` (one of db_errors)."""
        return SKIP

    def _grant_hint(self) -> str:
        return "grant it SELECT on the table"

    def _poll_window(self) -> None:
        """From tick(): where the read-only window's close is checked on the task's poll (MySQL)."""

    def _after_chunk_started(self) -> None:
        """From tick(), after a chunk was started."""

    def _blocking_ready(self) -> bool:
        """May a queued blocking snapshot start now?"""
        return True

    def _blocking_session(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _blocking_table(self, session: Any, table_id: str) -> Any:
        raise NotImplementedError

    def _blocking_rows(self, session: Any, current: Collection, table: Any) -> Iterator[int]:
        """A blocking snapshot's rows of one table emitted as `op: r`, yielding the count of each batch."""
        raise NotImplementedError

    # read.only=true
    def _read_only_watermark(self, session: Any, chunk_id: str, which: str) -> None:
        """Reads the low (`open`: sets `self._window`) or high (`close`) watermark; writes nothing."""
        raise NotImplementedError

    def _transaction_of(self, pos: Any) -> tuple[Any, ...] | None:
        """The streamed change's transaction, as the window's `opens` / `closes` take it."""
        raise NotImplementedError

    def _window_close_at(self, pos: Any, offset: dict[str, Any]) -> tuple[Any, dict[str, Any]] | None:
        """A change of a transaction after the high watermark: the rows' position and offset (None: not yet)."""
        raise NotImplementedError

    def _reread(self, window: Any) -> bool:
        """Must the chunk be read again (Debezium's rereadChunk)?"""
        return False

    # -- wiring ----------------------------------------------------------------------------------
    def _attached(self) -> None:
        """From the connector's attach(): a resumed snapshot keeps only what is still captured."""
        if self.ctx.running:
            self.ctx.keep_captured(self.captured_collections())
        self._sync()

    def _start_worker(self) -> None:
        """The work (channels, chunks, blocking snapshots) runs on a thread of its own."""
        self._worker = threading.Thread(target=self._work, name=self.thread_name, daemon=True)
        self._worker.start()

    def _work(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.tick()
            except Exception as e:  # never kill the thread: a lost connection is retried
                self.log.warning("Incremental snapshot: %s; retrying in 1 s", e)
                self._reset_connection()
                self._retry_at = time.monotonic() + 1.0
                busy = False
            if not busy:
                self._stop.wait(0.02)

    def close(self) -> None:
        self._stop.set()
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(10)
        if self._reading is not None:
            try:
                self._reading[1].result(timeout=10)
            except Exception as e:
                self.log.debug("the chunk read in flight at close: %s", e)
            self._reading = None
        for channel in self.channels:
            closer = getattr(channel, "close", None)
            if closer is not None:
                closer()
        self._reset_connection()

    def _sync(self) -> None:
        with self.lock:
            state = self.ctx.offset()
        self._publish_state(state)

    # -- the stream's changes ------------------------------------------------------------------
    def _on_change(self, op: str, table: Any, table_id: str, before: Row, after: Row, pos: Any, offset: Any) -> bool:
        """A streamed row change, before the connector forwards it; False: the signal table's, not forwarded."""
        if self._window is not None:
            self._read_only_step(pos, offset)
        if self.signal_table is not None and table_id.lower() == self.signal_table:
            self._signal_row(op, before, after, pos, offset)
            return self._captures_signal_table(table)
        ctx = self.ctx
        if ctx.window_open:  # set only on the stream's thread: read without the lock
            with self.lock:
                current = ctx.current
                if ctx.window_open and current is not None and self._same(current.id, table_id):
                    if before is not None:
                        ctx.deduplicate(key_of(table, before))
                    if after is not None:
                        ctx.deduplicate(key_of(table, after))
        return True

    def _same(self, a: str, b: str) -> bool:
        return a.lower() == b.lower() if self.ids_ignore_case else a == b

    def _text(self, row: Row, index: int) -> str | None:
        v = self._column(row, index)
        if v is None:
            return None
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)

    def _signal_row(self, op: str, before: Row, after: Row, pos: Any, offset: dict[str, Any]) -> None:
        with self.lock:
            ctx = self.ctx
            if op == "d" and before is not None:
                if (
                    self.signals.watermarking == "insert_delete"
                    and ctx.chunk_id
                    and self._text(before, 0) == f"{ctx.chunk_id}-open"
                ):
                    self._close_window(pos, offset)
                return
            if op != "c" or after is None:
                return
            signal_id, kind = self._text(after, 0) or "", self._text(after, 1) or ""
            if kind == signal_types.WINDOW_OPEN:
                if ctx.chunk_id and signal_id == f"{ctx.chunk_id}-open":
                    ctx.window_open = True
                return
            if kind == signal_types.WINDOW_CLOSE:
                if ctx.chunk_id and signal_id == f"{ctx.chunk_id}-close":
                    self._close_window(pos, offset)
                return
            if "source" in self.signals.channels:
                self.processor.process(SignalRecord(signal_id, kind, self._text(after, 2), "source"))

    def _close_window(self, pos: Any, offset: dict[str, Any]) -> None:
        ctx = self.ctx
        with self.lock:
            if not ctx.window_open:
                self.log.warning(
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
            rows = ctx.close_window()
            self._sync()
            after = {k: v for k, v in offset.items() if k not in OFFSET_KEYS}
            after.update(ctx.offset())
        self._emit_rows(rows, pos, before, after)
        self.rows_emitted += len(rows)
        self.chunks += 1
        self.notify.chunk(ctx, table_id, len(rows))
        self._log_timing(t_seen, len(rows))
        if not ctx.running:
            self.log.info("Incremental snapshot completed (%d rows in %d chunks)", self.rows_emitted, self.chunks)

    # -- SnapshotControl (the signal actions) ----------------------------------------------------
    def add_collections(self, collections: list[Collection], signal_id: str) -> None:
        if self.signal_table is None and not self.read_only:
            self.log.warning(
                "Signal %r: an incremental snapshot needs signal.data.collection (the table its watermarks are "
                "written to); set it and send the signal again; ignored",
                signal_id,
            )
            return
        with self.lock:
            added = self.ctx.add(collections, signal_id)
            self._sync()
        self.notify.started(self.ctx, signal_id, [c.id for c in added])
        self.log.info(
            "Signal %r: incremental snapshot of %s queued%s",
            signal_id, ", ".join(c.id for c in added) or "(already queued)",
            "" if not self.ctx.paused else " (paused: send resume-snapshot)",
        )  # fmt: skip

    def stop_collections(self, ids: set[str] | None, signal_id: str) -> None:
        with self.lock:
            dropped = self.ctx.remove(ids)
            self._sync()
        self.notify.aborted(self.ctx, signal_id, dropped)
        self.log.info("Signal %r: incremental snapshot of %s stopped", signal_id, ", ".join(dropped) or "nothing")

    def pause(self, signal_id: str) -> None:
        with self.lock:
            self.ctx.paused = True
        self.notify.paused(self.ctx)
        self.log.info("Signal %r: incremental snapshot paused", signal_id)

    def resume(self, signal_id: str) -> None:
        with self.lock:
            self.ctx.paused = False
        self.notify.resumed(self.ctx)
        self.log.info("Signal %r: incremental snapshot resumed", signal_id)

    def blocking_snapshot(self, collections: list[Collection], signal_id: str) -> None:
        """Debezium's blocking snapshot: the tables are read whole, as `op: r` with `source.snapshot: true`
        (see each connector for where its rows rank); a task stopped during it does not resume it."""
        with self.lock:
            self._blocking_queue.extend(collections)
        self.log.info("Signal %r: blocking snapshot of %s queued", signal_id, ", ".join(c.id for c in collections))

    # -- polled work -----------------------------------------------------------------------------
    def tick(self) -> bool:
        """Reads the polled channels every signal.poll.interval.ms and starts the next chunk when none is in
        flight. True while a blocking snapshot runs (it reads a batch per call)."""
        if self._blocking is not None:
            try:
                next(self._blocking)
                return True
            except StopIteration:
                self._blocking = None
            except self.db_errors as e:
                self.log.warning("Blocking snapshot failed (%s); streaming resumes without the rest of it", e)
                self._blocking = None
        self._poll_channels()
        if self._window is not None:
            self._poll_window()
        if self._collect():
            return False  # the chunk thread still writes the watermarks or reads the rows
        if self._ready():
            self._read_chunk()
            self._after_chunk_started()
        with self.lock:
            blocking, self._blocking_queue = self._blocking_queue, []
        if blocking:
            if self._blocking_ready():
                self._blocking = self._blocking_reads(blocking)
            else:
                with self.lock:
                    self._blocking_queue = blocking + self._blocking_queue
        return False

    def _blocking_reads(self, collections: list[Collection]) -> Iterator[None]:
        """The blocking snapshot's tables one after another, a batch of rows per step (per tick())."""
        notify, ids = self.notify_blocking, [c.id for c in collections]
        notify.started()
        current: Collection | None = None
        try:
            with self._blocking_session() as session:
                for current in collections:
                    table = self._blocking_table(session, current.id)
                    if table is None:
                        self.log.warning("Blocking snapshot of %s skipped: the table does not exist", current.id)
                        continue
                    notify.table_in_progress(current.id, ids)
                    rows = 0
                    for batch in self._blocking_rows(session, current, table):
                        rows += batch
                        yield
                    self.log.info("Blocking snapshot of %s: %d rows", current.id, rows)
                    notify.table_completed(current.id, rows, ids)
                current = None
            notify.completed()
        except self.db_errors:
            if current is not None:
                notify.table_failed(current.id)
            notify.aborted()
            raise

    def _poll_channels(self) -> None:
        if not self.channels:
            return
        now = time.monotonic()
        if now < self._next_poll:
            return
        self._next_poll = now + self.signals.poll_interval_s
        for channel in self.channels:
            for signal in channel.read():
                with self.lock:
                    self.processor.process(signal)

    def _ready(self) -> bool:
        with self.lock:
            ctx = self.ctx
            ready = ctx.running and not ctx.paused and ctx.chunk_id is None and time.monotonic() >= self._retry_at
        return ready and self._drained()

    # -- the chunks ------------------------------------------------------------------------------
    def _read_chunk(self) -> None:
        """Plans the next chunk (its table, and its maximum key at the collection's first chunk) and starts
        its read: inline, or on the chunk thread (`_reads_on_thread`)."""
        with self.lock:
            current, cached = self.ctx.current, self.ctx.last_key is not None
        if current is None:
            return
        try:
            table = self._chunk_table(current, cached)
            if table is None:
                self.log.warning("Incremental snapshot of %s skipped: the table does not exist", current.id)
                self._done_with(current, UNKNOWN_SCHEMA)
                return
            key_names = self._key_names(table)
            order = [current.surrogate_key] if current.surrogate_key else key_names
            if not key_names:
                self.log.warning(
                    "Incremental snapshot of %s skipped: the table has no primary key; set message.key.columns for "
                    "it (and a surrogate-key in the signal) to snapshot it incrementally",
                    current.id,
                )
                self._done_with(current, NO_PRIMARY_KEY)
                return
            with self.lock:
                maximum = self.ctx.maximum_key
            if maximum is None:
                top = self._max_key(current, order)
                if top is None:
                    self.log.info("Incremental snapshot of %s: the table is empty", current.id)
                    self._done_with(current, EMPTY)
                    return
                maximum = tuple(top)
                with self.lock:
                    if self.ctx.current is not current:
                        return  # stopped meanwhile
                    self.ctx.maximum_key = maximum
                    self._sync()
        except self.db_errors as e:
            self._chunk_failed(current, None, e)
            return
        with self.lock:
            if self.ctx.current is not current or self.ctx.paused:
                return
            chunk = Chunk(str(uuid.uuid4()), current, table, order, self.ctx.last_key, maximum, self.signals.chunk_size)
            self.ctx.begin_chunk(chunk.id)
        self._timing = {"last": self._last_close, "start": time.perf_counter()}
        if not self._reads_on_thread():
            try:
                with self._session(False) as session:
                    self._read_window(session, chunk)
            except self.db_errors as e:
                self._chunk_failed(current, chunk.id, e)
            return
        future: Future[None] = Future()

        def read() -> None:
            try:
                with self._session(True) as session:
                    self._read_window(session, chunk)
            except BaseException as e:  # handed to tick() by _collect()
                future.set_exception(e)
            else:
                future.set_result(None)

        # A daemon thread per chunk (a thread costs far less than a chunk): a read hung on the database does
        # not keep the process from exiting.
        self._reading = (chunk, future)
        threading.Thread(target=read, name=self.thread_name, daemon=True).start()

    def _collect(self) -> bool:
        """From tick(): True while the chunk thread still reads; a read that failed is handled here."""
        if self._reading is None:
            return False
        chunk, future = self._reading
        if not future.done():
            return True
        self._reading = None
        error = future.exception()
        if isinstance(error, self.db_errors):
            self._chunk_failed(chunk.collection, chunk.id, error)
        elif error is not None:
            raise error
        return False

    def _read_window(self, session: Any, chunk: Chunk) -> None:
        """Low watermark, the chunk's SELECT, its rows registered, high watermark."""
        timing = self._timing
        self._watermark(session, chunk, "open")
        timing["open"] = time.perf_counter()
        rows, end, count = self._select_chunk(session, chunk)
        timing["select"] = time.perf_counter()
        with self.lock:
            if self.ctx.chunk_id != chunk.id:
                return  # stopped meanwhile (stop-snapshot): no high watermark, the rows are dropped
            self.ctx.set_rows(rows, end, count >= chunk.size)
        timing["rows"] = time.perf_counter()
        self._watermark(session, chunk, "close")
        timing["close"] = time.perf_counter()

    def _watermark(self, session: Any, chunk: Chunk, which: str) -> None:
        """Writes the low (`open`) or high (`close`) watermark to the signal table (read.only: reads it)."""
        if self.read_only:
            self._read_only_watermark(session, chunk.id, which)
            return
        if which == "close" and self.signals.watermarking == "insert_delete":
            self._delete_signal(session, f"{chunk.id}-open")
            return
        kind = signal_types.WINDOW_OPEN if which == "open" else signal_types.WINDOW_CLOSE
        meta = json.dumps({f"{which}WindowTimestamp": time.time(), "dataCollectionId": chunk.collection.id})
        self._insert_signal(session, (f"{chunk.id}-{which}", kind, meta))

    def _chunk_failed(self, current: Collection, chunk_id: str | None, e: BaseException) -> None:
        failure = self._failure(e)
        if failure == DENIED:
            self.log.error(
                "Incremental snapshot of %s stopped: the connector's user may not do what a chunk needs (%s); "
                "%s, then send the signal again",
                current.id, e, self._grant_hint(),
            )  # fmt: skip
            self._forget(chunk_id)
            self._done_with(current, SQL_EXCEPTION)
            return
        if failure == RETRY:
            self.log.warning("Incremental snapshot chunk of %s failed (%s); retrying in 1 s", current.id, e)
            self._reset_connection()
            self._forget(chunk_id)
            self._retry_at = time.monotonic() + 1.0
            return
        # Debezium's TABLE_SCAN_COMPLETED with status SQL_EXCEPTION: the table is skipped.
        text = str(e).strip()
        self.log.warning(
            "Incremental snapshot of %s skipped: its chunk query failed (%s); check the signal's "
            "additional-conditions filter and the table",
            current.id, text.splitlines()[0] if text else type(e).__name__,
        )  # fmt: skip
        self._done_with(current, SQL_EXCEPTION)

    def _forget(self, chunk_id: str | None) -> None:
        with self.lock:
            if chunk_id is None or self.ctx.chunk_id == chunk_id:
                self.ctx.forget_chunk()

    def _done_with(self, current: Collection, status: str) -> None:
        with self.lock:
            if self.ctx.current is current:
                self.ctx.next_collection()
            self._sync()
        self.notify.table_done(self.ctx, current.id, status)

    def _log_timing(self, t_seen: float, emitted: int) -> None:
        """One DEBUG line per chunk: where its time went, from the read's start to its rows in the buffer."""
        t, self._timing = self._timing, {}
        if not t or not self.log.isEnabledFor(logging.DEBUG):
            return
        ms = lambda a, b: (t.get(b, 0.0) - t.get(a, 0.0)) * 1000  # noqa: E731
        now = time.perf_counter()
        self.log.debug(
            "chunk %s: since last close %.0f ms, low watermark %.1f ms, select %.1f ms, rows %.1f ms, high watermark "
            "%.1f ms, high watermark seen %.0f ms later, %d rows emitted in %.1f ms, buffer %d",
            self.chunks, ms("last", "start"), ms("start", "open"), ms("open", "select"), ms("select", "rows"),
            ms("rows", "close"), (t_seen - t.get("close", t_seen)) * 1000, emitted, (now - t_seen) * 1000,
            self._backlog(),
        )  # fmt: skip
        self._last_close = now

    # -- read.only=true: the window kept from the streamed transactions ---------------------------
    def _window_of_chunk(self) -> Any:
        window = self._window
        if window is not None and window.chunk_id != self.ctx.chunk_id:
            self._window = window = None  # the chunk was stopped or failed
        return window

    def _read_only_step(self, pos: Any, offset: dict[str, Any]) -> None:
        """A streamed change: a transaction the low watermark did not see opens the window; one the high
        watermark did not see closes it, before its changes."""
        transaction = self._transaction_of(pos)
        if transaction is None:
            return
        with self.lock:
            window = self._window_of_chunk()
            if window is None:
                return
            if not self.ctx.window_open and window.opens(*transaction):
                self.ctx.window_open = True
            if window.closes(*transaction):
                at = self._window_close_at(pos, offset)
                if at is not None:
                    self._read_only_close(*at)

    def _read_only_close(self, pos: Any, offset: dict[str, Any]) -> None:
        with self.lock:
            window, self._window = self._window, None
            if window is not None and self._reread(window):
                self.ctx.forget_chunk()
                return
            self.ctx.window_open = True  # a window no change opened holds no transaction to deduplicate
            self._close_window(pos, offset)
