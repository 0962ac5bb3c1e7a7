"""The data part of an initial snapshot with `snapshot.max.threads` > 1 (Debezium's parallel snapshot).

Readers (snapshot_reader.py) each hold a transaction opened WITH CONSISTENT SNAPSHOT at the
snapshot's one point (see `join_snapshot`), and read chunks (snapshot_chunks.py): whole tables,
and primary-key ranges of large ones. The task's thread turns their rows into the same `r`
records the one-thread path emits, in another order across tables and chunks only; the rows of
one key are in one chunk. Markers follow the one-thread path: `first` on the first row of the
first table, `first_in_data_collection` on the first row of each table seen, one
`last_in_data_collection` per table, and `last`, with the completed offset, on the very last
record.

Cost (issue 22): readers parse rows at half PyMySQL's cost (snapshot_fetch.py) and send batches by
column, datetimes and Decimals as text (decoded here, at a fifth of their pickling cost). This
thread emits a batch `step` rows (max.batch.size) per yield, the records one poll() takes: a
whole fetch of records alive at once had the GC visit and promote them, a third of this
thread's time. When no reader has a batch waiting, this thread reads one of its own connection.

Resuming (snapshot.py) is per table here: the offsets name the tables whose last record is out
(`snapshot_tables_done`), and a resumed parallel snapshot reads every other table whole (the
chunks of several tables are in flight at once, so no one key says how far a table got).
"""

from __future__ import annotations

import logging
import queue
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pymysql.cursors

from cdc.api import ConnectException
from cdc_debezium.notifications import InitialSnapshotNotifier
from cdc_debezium.progress import SnapshotProgress
from cdc_debezium.source_info import SnapshotRecord
from cdc_mysql.dispatcher import EventDispatcher
from cdc_mysql.offset_context import MySqlOffsetContext
from cdc_mysql.schema import MySqlSchema, TableSchema
from cdc_mysql.snapshot_chunks import Chunk, plan_table
from cdc_mysql.snapshot_decoders import CONVERSIONS, decode_column
from cdc_mysql.snapshot_fetch import RowReader, columns_of, deferred_columns
from cdc_mysql.snapshot_reader import ReaderProcess, reader_failure
from cdc_mysql.snapshot_records import Emit, compile_emit
from cdc_mysql.source_info import SourceInfo
from cdc_mysql.table import TableDef

log = logging.getLogger(__name__)

IN_FLIGHT = 2  # chunks queued per reader, so it never waits for the next one


class OwnReader:
    """The snapshot's own connection as one more reader: a chunk's SELECT fetched batch by batch, in
    the messages the reader processes send."""

    def __init__(self, conn: Any, fetch_size: int) -> None:
        self.conn = conn
        self.fetch_size = fetch_size
        self.cursor: Any | None = None
        self.chunk_id = -1
        self.reader = RowReader()
        self.deferred: frozenset[int] = frozenset()
        self.width = 0

    def idle(self) -> bool:
        return self.cursor is None

    def open(self, chunk_id: int, chunk: Chunk) -> tuple[Any, ...]:
        self.cursor = self.conn.cursor(pymysql.cursors.SSCursor)
        self.chunk_id = chunk_id
        self.cursor.execute(chunk.sql, chunk.args or None)
        names = [d[0] for d in self.cursor.description or ()]
        deferred = deferred_columns(self.cursor)  # decoded by column, as the readers' batches are
        self.deferred, self.width = frozenset(i for i, _ in deferred), len(names)
        return ("names", chunk_id, names, deferred)

    def abandon(self) -> None:
        """Leaves an open chunk unread: the snapshot closes the connection, and PyMySQL would otherwise read
        the rest off the closed connection when the cursor is collected (an ignored AttributeError)."""
        result = getattr(self.cursor, "_result", None)
        if result is not None:
            result.unbuffered_active = False
        self.cursor = None

    def step(self) -> tuple[Any, ...]:
        assert self.cursor is not None
        rows = self.reader.fetch(self.cursor, self.fetch_size, self.deferred)
        if rows:
            columns = columns_of(rows, self.width) if self.deferred else None
            return ("rows", self.chunk_id, rows) if columns is None else ("cols", self.chunk_id, columns)
        self.cursor.close()
        self.cursor = None
        return ("done", self.chunk_id, 0)


def batch_rows(message: tuple[Any, ...], decoders: list[tuple[int, Any]]) -> list[tuple[Any, ...]]:
    """The row tuples of a reader's "rows" or "cols" message, its text-sent columns decoded (`decoders`)."""
    if message[0] == "cols":
        columns = message[2]
        for i, decoder in decoders:
            columns[i] = decode_column(decoder, columns[i])
        return list(zip(*columns, strict=True))
    rows = message[2]
    if not decoders:
        return rows
    fixed = []  # rows of several lengths (PyMySQL's short rows): value by value
    for row in rows:
        values = list(row)
        for i, decoder in decoders:
            if i < len(values) and values[i] is not None:
                values[i] = decoder(values[i])
        fixed.append(tuple(values))
    return fixed


def join_snapshot(readers: list[ReaderProcess], inbox: queue.Queue, point: tuple[str, int] | None) -> bool:
    """Opens every reader's transaction WITH CONSISTENT SNAPSHOT; False when one is not at `point`.

    Called while the snapshot's locks are held. MariaDB reports each transaction's binlog
    position, which must be the snapshot's own (`point`); with no report (MySQL) the caller
    checks that nothing committed meanwhile.
    """
    for r in readers:
        r.send("begin")
    consistent = True
    for _ in readers:
        index, message = inbox.get(timeout=60)
        if message[0] != "begun":
            raise ConnectException(f"Snapshot reader {index} could not start its transaction: {message[-1]}")
        file, pos = message[1], message[2]
        if point is not None and file is not None and (file, pos) != point:
            log.info("Snapshot reader %d started at %s:%s, not at the snapshot's %s:%d", index, file, pos, *point)
            consistent = False
    return consistent


class ParallelRead:
    def __init__(
        self,
        readers: list[ReaderProcess],
        inbox: queue.Queue,
        schema: MySqlSchema,
        source_info: SourceInfo,
        dispatcher: EventDispatcher,
        progress: SnapshotProgress,
        stopped: Callable[[], bool],
        chunks_per_table: int,
        fetch_size: int,
        notify: InitialSnapshotNotifier | None = None,
        captured: Sequence[str] = (),
    ) -> None:
        self.readers = readers
        self.inbox = inbox
        self.schema = schema
        self.source_info = source_info
        self.dispatcher = dispatcher
        self.progress = progress
        self.stopped = stopped
        self.chunks_per_table = chunks_per_table
        self.fetch_size = fetch_size
        # TABLE_CHUNK_IN_PROGRESS / TABLE_CHUNK_COMPLETED per chunk (`captured`: every captured table's id).
        self.notify = notify if notify is not None and notify.enabled else None
        self.captured = list(captured)
        # Rows emitted between yields: what one poll() takes.
        self.step = max(1, min(fetch_size, int(getattr(dispatcher.config, "max_batch_size", fetch_size))))

    def plan(
        self,
        conn: Any,
        tables: list[TableDef],
        estimate: Callable[[TableDef], int],
        override: Callable[[TableDef], str | None],
    ) -> tuple[list[Chunk], dict[str, int], set[str]]:
        """Every chunk in table order, the row estimates, and the tables read by their select override."""
        chunks: list[Chunk] = []
        estimates: dict[str, int] = {}
        overridden: set[str] = set()
        for table in tables:
            estimates[table.id] = estimate(table)
            statement = override(table)
            if statement is not None:
                chunks.append(Chunk(table.id, 0, 1, statement, ()))
                overridden.add(table.id)
                continue
            chunks.extend(
                plan_table(conn, table.db, table.name, table.primary_key, estimates[table.id], self.chunks_per_table)
            )
        return chunks, estimates, overridden

    def run(
        self,
        conn: Any,
        tables: list[TableDef],
        offset: MySqlOffsetContext,
        estimate: Callable[[TableDef], int],
        override: Callable[[TableDef], str | None],
        read_at: tuple[str, int] | None = None,
    ) -> Iterator[None]:
        """Emits the `r` records of `tables` read at `read_at` (default: the offset's position); each
        table's last record carries the offset's position, the mark a sink clears older rows by."""
        done = tuple(offset.tables_done or ())
        snapshot_offset = offset.progress(done)
        completed = offset.completed().offset()
        read_at = read_at or (offset.file, offset.pos)
        resumed = bool(done) or offset.snapshot_table is not None or read_at != (offset.file, offset.pos)
        by_id = {t.id: t for t in tables}
        chunks, estimates, overridden = self.plan(conn, tables, estimate, override)
        log.info("Snapshot: %d tables in %d chunks on %d connections", len(tables), len(chunks), len(self.readers) + 1)
        first_table = tables[0].id if tables and not resumed else None
        remaining = {t.id: 0 for t in tables}
        for c in chunks:
            remaining[c.table_id] += 1
        schemas: dict[str, TableSchema] = {t.id: self.schema.schema_for(t) for t in tables}
        started: set[str] = set()
        seen: set[str] = set()  # tables with a row out (the next one is not first_in_table)
        # Rows are (emitter key, values, first_in_table); emitters by (table, column names).
        pending: dict[str, tuple[tuple[str, tuple[str, ...]], tuple[Any, ...], bool]] = {}  # not yet out
        held: list[tuple[tuple[str, tuple[str, ...]], tuple[Any, ...], bool]] = []  # a finished table's last
        held_table: list[str] = []
        emitters: dict[int, tuple[str, tuple[str, ...]]] = {}  # by chunk
        decoders: dict[int, list[tuple[int, Any]]] = {}  # by chunk: its text-sent columns' decoders
        compiled: dict[tuple[str, tuple[str, ...]], Emit] = {}
        marks: dict[tuple[str, tuple[str, ...]], Emit] = {}  # the same at the offset's position
        chunk_ids: dict[int, Chunk] = {}
        todo = deque(enumerate(chunks))
        work: list[tuple[Emit, list[tuple[Any, ...]], int, str]] = []  # the rows `handle` took, for `emit_rows`
        true, row_progress = SnapshotRecord.TRUE.value, self.progress.row
        notify, rows_read = self.notify, dict.fromkeys(remaining, 0)  # rows_read: each table's rows taken so far
        self.progress.begin(len(tables))

        def emit(
            p: tuple[tuple[str, tuple[str, ...]], tuple[Any, ...], bool], table_id: str, last_in_table: bool,
            final: bool,
        ) -> None:  # fmt: skip
            nonlocal done, snapshot_offset
            ckey, values, first_in_table = p
            marker = SnapshotRecord.of(
                first=first_in_table and table_id == first_table,
                last=final,
                first_in_table=first_in_table,
                last_in_table=last_in_table,
            )
            if last_in_table:
                done = (*done, table_id)
                snapshot_offset = offset.progress(done)
                marks[ckey](values, marker.value, completed if final else snapshot_offset)
            else:
                compiled[ckey](values, marker.value, completed if final else snapshot_offset)

        def begin() -> tuple[int, Chunk]:
            """The next chunk, taken by a reader: its table's start, its TABLE_CHUNK_IN_PROGRESS."""
            cid, chunk = todo.popleft()
            chunk_ids[cid] = chunk
            if chunk.table_id not in started:
                started.add(chunk.table_id)
                self.progress.start_table(chunk.table_id, estimates[chunk.table_id])
            if notify is not None:
                notify.chunk_in_progress(chunk.table_id, chunk.index, chunk.count, rows_read[chunk.table_id])
            return cid, chunk

        def feed(reader: ReaderProcess) -> None:
            while todo and reader.in_flight < IN_FLIGHT:
                cid, chunk = begin()
                reader.send("chunk", cid, chunk.sql, chunk.args or None)
                reader.in_flight += 1

        def emit_rows() -> Iterator[None]:
            """Emits the rows `handle` left (all but a batch's first and last), yielding every `step` rows: a
            poll takes max.batch.size records, so few records are alive at a time, and few reach the GC."""
            table_emit, rows, lo, tid = work.pop()
            for _ in rows:
                row_progress(tid)
            end, step = len(rows) - 1, self.step
            while True:
                hi = min(lo + step, end)
                for values in rows[lo:hi]:
                    table_emit(values, true, snapshot_offset)
                yield
                lo = hi
                if lo >= end:
                    return

        def handle(index: int, message: tuple[Any, ...]) -> bool:
            """Takes one message of reader `index` (-1: this connection); True when it has rows for `emit_rows`."""
            kind = message[0]
            if kind == "rows" or kind == "cols":
                tid, rows = chunk_ids[message[1]].table_id, batch_rows(message, decoders[message[1]])
                rows_read[tid] += len(rows)
                ckey = emitters[message[1]]
                table_emit = compiled[ckey]
                start = 0
                prev = pending.pop(tid, None)
                if prev is not None:
                    emit(prev, tid, False, False)
                elif tid not in seen and rows:
                    seen.add(tid)
                    start = 1
                    if len(rows) > 1:
                        emit((ckey, rows[0], True), tid, False, False)
                    else:
                        pending[tid] = (ckey, rows[0], True)
                if len(rows) > start:
                    pending[tid] = (ckey, rows[-1], False)
                work.append((table_emit, rows, start, tid))  # the rows between: `emit_rows`
                return True
            if kind == "names":
                chunk = chunk_ids[message[1]]
                table = by_id[chunk.table_id]
                names = list(message[2]) if chunk.table_id in overridden else [c.name for c in table.columns]
                ckey = (chunk.table_id, tuple(names))
                if ckey not in compiled:
                    ts = schemas[chunk.table_id]
                    compiled[ckey] = compile_emit(ts, names, self.source_info, self.dispatcher, *read_at)
                    marks[ckey] = (
                        compiled[ckey]
                        if read_at == (offset.file, offset.pos)
                        else compile_emit(ts, names, self.source_info, self.dispatcher, offset.file, offset.pos)
                    )
                emitters[message[1]] = ckey
                decoders[message[1]] = [(i, CONVERSIONS[t]) for i, t in message[3]]
                return False
            if kind == "done":
                chunk = chunk_ids.pop(message[1])
                emitters.pop(message[1], None)
                decoders.pop(message[1], None)
                if index >= 0:
                    reader = self.readers[index]
                    reader.in_flight -= 1
                    feed(reader)
                if notify is not None:
                    notify.chunk_completed(chunk.table_id, chunk.index, chunk.count, self.captured)
                remaining[chunk.table_id] -= 1
                if remaining[chunk.table_id] == 0:
                    self.progress.finish_table(chunk.table_id)
                    last = pending.pop(chunk.table_id, None)
                    if last is not None:
                        if held:
                            emit(held[0], held_table[0], True, False)
                            held.clear()
                            held_table.clear()
                        held.append(last)
                        held_table.append(chunk.table_id)
                return False
            raise ConnectException(f"Snapshot reader {index} failed: {reader_failure(message)}")

        own = OwnReader(conn, self.fetch_size)
        try:
            for r in self.readers:
                feed(r)
            while any(remaining.values()):
                if self.stopped():
                    raise InterruptedError("snapshot stopped")
                try:
                    index, message = self.inbox.get_nowait()
                except queue.Empty:
                    # Nothing from the readers: this connection reads a batch of a chunk of its own.
                    if own.idle() and todo:
                        handle(-1, own.open(*begin()))
                    if not own.idle():
                        if handle(-1, own.step()):
                            yield from emit_rows()
                        continue
                    try:
                        index, message = self.inbox.get(timeout=0.2)
                    except queue.Empty:
                        continue
                if handle(index, message):
                    yield from emit_rows()
        except BaseException:  # a stop or a failure: the snapshot closes this connection
            own.abandon()
            raise
        if held:
            emit(held[0], held_table[0], True, True)
        self.progress.complete()
        yield
