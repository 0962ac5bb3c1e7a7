"""PostgresStreamingChangeEventSource: pgoutput push streaming into Debezium change records.

Every record carries its position: the commit LSN of its transaction (`lsn_commit`), its
own LSN and how many events before it share that LSN (COPY writes several rows in one WAL
record). A restart asks the slot for `lsn_commit` and skips up to that position.
The slot's flushed LSN moves only when `confirm()` is called with a stored offset.

With `stream.in.progress.transactions` (proto 2), large transactions arrive in chunks before
they commit; the chunks are kept per xid (stream_buffer) and emitted at Stream Commit as if
the transaction had arrived whole, so events and offsets are the same as without streaming.
No heartbeat is emitted while such a transaction is open.

`event.processing.failure.handling.mode` decides what an event that cannot be turned into a record
does (a value no schema can carry, a delete that cannot be keyed): `fail` stops the task with the
cause, `warn` logs it with its offset and goes on, `skip`/`ignore` go on logging at DEBUG, as
Debezium's EventDispatcher does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from cdc_debezium.heartbeat import Heartbeat
from cdc_debezium.queue import ChangeEventQueue
from cdc_debezium.transaction import TransactionMonitor
from cdc_postgres.change_records import PostgresChangeRecordEmitter
from cdc_postgres.connection import streaming_application_name
from cdc_postgres.pgoutput import (
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    PgOutputDecoder,
    Relation,
    StreamAbort,
    StreamCommit,
    StreamStart,
    StreamStop,
    Truncate,
    TypeMessage,
    Update,
    insert_values,
    pg_timestamp,
)
from cdc_postgres.replication import ReplicationConnection
from cdc_postgres.schema import PostgresSchema
from cdc_postgres.stream_buffer import BUFFERED_KINDS, StreamedTransactions

log = logging.getLogger(__name__)

PG_EPOCH_US = 946_684_800_000_000


class Position:
    """Where the stream stands, and where a restart must skip to."""

    __slots__ = ("events", "lsn", "lsn_commit")

    def __init__(self, lsn_commit: int | None, lsn: int | None, events: int = 0) -> None:
        self.lsn_commit = lsn_commit
        self.lsn = lsn
        self.events = events

    def covers(self, commit_lsn: int, lsn: int, events: int) -> bool:
        """True if an event at (commit_lsn, lsn, events-th at that lsn) was already emitted."""
        if self.lsn_commit is None or self.lsn is None or commit_lsn != self.lsn_commit:
            return False
        if self.events == 0 and self.lsn == self.lsn_commit:
            # A position between transactions (a heartbeat's, an idle incremental chunk's: the end of the
            # last record streamed), not an event: the next transaction's commit record may start exactly
            # there, and its changes, at lower LSNs, were never emitted.
            return False
        return lsn < self.lsn or (lsn == self.lsn and events <= self.events)


class PostgresStreamingChangeEventSource:
    def __init__(
        self,
        dsn: dict[str, Any],
        slot: str,
        publication: str,
        schema: PostgresSchema,
        emitter: PostgresChangeRecordEmitter,
        table_filter: Callable[[str], bool],
        message_filter: Callable[[str], bool],
        message_topic: str,
        heartbeat: Heartbeat | None = None,
        heartbeat_query: Callable[[], None] | None = None,
        status_interval: float = 10.0,
        transactions: TransactionMonitor | None = None,
        stream_spill_bytes: int | None = None,
        failure_mode: str = "fail",
    ) -> None:
        self.dsn = dsn
        self.slot = slot
        self.publication = publication
        self.schema = schema
        self.emitter = emitter
        self.table_filter = table_filter
        self.message_filter = message_filter
        self.message_topic = message_topic
        self.heartbeat = heartbeat
        self.heartbeat_query = heartbeat_query
        self.status_interval = status_interval
        self.transactions = transactions
        if transactions is not None:
            emitter.tx_block = lambda table: transactions.block(table) if transactions.active else None
        self._confirm_lsn = 0
        self._confirm_lock = threading.Lock()
        self.last_received_lsn = 0
        self.last_commit_lsn: int | None = None
        self._last_offset: dict[str, Any] = {}
        self.connected = False  # the replication stream is open (the Connected metric)
        # pgoutput proto 2 streaming of in-progress transactions: on when a memory bound is given.
        self.stream_spill_bytes = stream_spill_bytes
        self.failure_mode = failure_mode
        self._streams = StreamedTransactions(stream_spill_bytes or 0)
        self._tx: Begin | None = None
        self._same_lsn = (0, 0)  # (lsn, events seen at it)
        self._resume = Position(None, None)
        self._emitted: tuple[int, int, int] | None = None  # (commit LSN, LSN, events at it) of the last event

    @property
    def emitted(self) -> Position:
        """The last emitted event, so a reconnect resumes right after it (kept as a tuple per event)."""
        e = self._emitted
        return Position(None, None) if e is None else Position(*e)

    @emitted.setter
    def emitted(self, position: Position) -> None:
        lsn_commit, lsn = position.lsn_commit, position.lsn
        self._emitted = None if lsn_commit is None or lsn is None else (lsn_commit, lsn, position.events)

    def confirm(self, lsn: int) -> None:
        """Called by the task once an offset holding `lsn` is stored (from another thread)."""
        with self._confirm_lock:
            self._confirm_lsn = max(self._confirm_lsn, lsn)

    def run(self, start_lsn: int, resume: Position, stop: threading.Event) -> None:
        dsn = self.dsn
        if isinstance(dsn, dict):  # named for the slot it reads (cdc validate tells its own reader so)
            dsn = {**dsn, "application_name": streaming_application_name(self.slot)}
        rc = ReplicationConnection(dsn)
        streaming = self.stream_spill_bytes is not None
        # After a reconnect the server sends open transactions again from their start.
        self._streams = StreamedTransactions(self.stream_spill_bytes or 0)
        emit = self.emitter.emit
        queue = getattr(emit, "__self__", None)
        batched = isinstance(queue, ChangeEventQueue) and getattr(emit, "__func__", None) is ChangeEventQueue.enqueue
        buffer: list[Any] = []
        if batched:
            # Nothing but this thread emits into the queue (no signal channel wraps the emitter): the
            # records of one read batch go in with one enqueue_many, in order, instead of a lock each.
            self.emitter.emit = buffer.append  # type: ignore[method-assign]
        try:
            rc.start(self.slot, [self.publication], start_lsn, proto_version=2 if streaming else 1, streaming=streaming)
            self.connected = True
            self._loop(rc, resume, stop, (lambda: _flush(buffer, queue)) if batched else None)
        finally:
            if batched:
                self.emitter.emit = emit  # type: ignore[method-assign]
                # What was emitted is handed over, whatever ended the loop: `emitted` counts it.
                _flush(buffer, queue)
            self.connected = False
            self._streams.close()
            rc.close()

    def _loop(
        self,
        rc: ReplicationConnection,
        resume: Position,
        stop: threading.Event,
        flush: Callable[[], None] | None = None,
    ) -> None:
        decoder = PgOutputDecoder()
        decode = decoder.decode
        self._tx = None
        self._same_lsn = (0, 0)
        self._resume = resume
        streams = self._streams
        stream_xid: int | None = None  # between Stream Start and Stream Stop
        sent_confirm = 0
        last_status = time.monotonic()
        event = self._event
        insert = self._insert
        while not stop.is_set():
            confirm = self._confirm_lsn  # one int read: no lock needed (confirm() writes under it)
            now = time.monotonic()
            if confirm > sent_confirm or now - last_status >= self.status_interval:
                rc.confirm(confirm)
                sent_confirm, last_status = confirm, now
            batch = rc.read_batch(0.2)
            if not batch:
                # A keepalive's walEnd is the walsender's sent position: every transaction that
                # committed before it has already arrived, so an idle heartbeat may stand there.
                self.last_received_lsn = max(self.last_received_lsn, rc.received_lsn)
                if self.heartbeat is not None and self._idle() and self.heartbeat.due():
                    rc.send_status(reply_requested=True)  # ask for a fresh keepalive
                self._maybe_heartbeat()
                if flush is not None:
                    flush()
                continue
            for data_start, wal_end, _sent, payload in batch:
                if wal_end > self.last_received_lsn:
                    self.last_received_lsn = wal_end
                kind = payload[0]
                if stream_xid is not None:
                    if kind in BUFFERED_KINDS:
                        streams.add(stream_xid, data_start, payload)  # decoded if and when it commits
                        continue
                elif kind == 73:  # 'I': the most frequent message, without message objects
                    insert(*insert_values(payload), data_start)
                    continue
                msg = decode(payload)
                cls = msg.__class__
                if cls is Insert or cls is Update or cls is Delete or cls is Message or cls is Truncate:
                    event(msg, cls, data_start)
                elif cls is Begin:
                    self._tx = msg
                elif cls is Commit:
                    self._on_commit(msg)
                    self._tx = None
                    self._maybe_heartbeat()
                elif cls is Relation:
                    self._on_relation(msg)
                elif cls is StreamStart:
                    stream_xid = msg.xid
                elif cls is StreamStop:
                    stream_xid = None
                elif cls is StreamCommit:
                    self._stream_commit(msg)
                    self._maybe_heartbeat()
                elif cls is StreamAbort:
                    streams.abort(msg.xid, msg.sub_xid)
                # Origin, Type: nothing to emit
            if flush is not None:
                flush()

    def _on_relation(self, rel: Relation) -> None:
        """A table's current structure (sent before its first change after any DDL).

        A table renamed (or moved to another schema) out of the filters stops being captured:
        its old schema must not keep routing its changes under the old name.
        """
        table_id = f"{rel.namespace}.{rel.name}"
        if self.table_filter(table_id):
            self.schema.on_relation(rel)
            return
        old = self.schema.by_relation.pop(rel.relation_id, None)
        if old is not None:
            log.warning(
                "table %s is now %s, which the table/schema include and exclude lists do not capture: its changes "
                "are no longer emitted (add %s to table.include.list to keep capturing it)",
                old.id, table_id, table_id,
            )  # fmt: skip

    def _idle(self) -> bool:
        """No transaction is open: a heartbeat offset may not skip any change."""
        return self._tx is None and not self._streams

    def _stream_commit(self, msg: StreamCommit) -> None:
        """Emit a streamed transaction as if it had arrived whole: its events, at its commit LSN."""
        decode = PgOutputDecoder(in_stream=True).decode
        self._tx = Begin(msg.commit_lsn, msg.commit_ts, msg.xid)
        for lsn, payload in self._streams.commit(msg.xid):
            m = decode(payload)
            cls = m.__class__
            if cls is Relation:
                self._on_relation(m)
            elif cls is not TypeMessage:
                self._event(m, cls, lsn)
        self._on_commit(Commit(msg.flags, msg.commit_lsn, msg.end_lsn, msg.commit_ts))
        self._tx = None

    def _place(self, lsn: int, prefix: str | None = None) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Count the event at `lsn` of the current transaction; its (pos, offset), or None to skip it.

        Skipped: an event a resume already emitted, and a logical decoding message (`prefix`) the
        message filter drops. Opens the transaction's BEGIN record when transaction metadata is on.
        """
        tx = self._tx
        same = self._same_lsn
        count = same[1] + 1 if same[0] == lsn else 1
        self._same_lsn = (lsn, count)
        commit_lsn = tx.final_lsn if tx is not None else lsn
        if prefix is not None and not self.message_filter(prefix):
            return None
        resume = self._resume
        if resume.lsn_commit is not None and resume.covers(commit_lsn, lsn, count):
            return None
        self._emitted = (commit_lsn, lsn, count)
        if tx is not None:
            tx_id: int | None = tx.xid
            ts_us = tx.commit_ts + PG_EPOCH_US
            offset = {
                "lsn_proc": lsn,
                "lsn": lsn,
                "lsn_commit": commit_lsn,
                "lsn_events_processed": count,
                "ts_usec": ts_us,
                "txId": tx_id,
            }
            transactions = self.transactions
            if transactions is not None and not transactions.active:
                # BEGIN sits just before the first event, so a resume never skips that event.
                begin_offset = {**offset, "lsn_events_processed": count - 1}
                emitter = self.emitter
                emitter.emit(transactions.begin(str(tx.xid), ts_us // 1000, emitter.partition, begin_offset))
        else:
            tx_id = None
            ts_us = time.time_ns() // 1000
            offset = {
                "lsn_proc": lsn,
                "lsn": lsn,
                "lsn_commit": commit_lsn,
                "lsn_events_processed": count,
                "ts_usec": ts_us,
            }
        self._last_offset = offset
        return {"lsn": lsn, "lsn_commit": commit_lsn, "tx_id": tx_id, "ts_us": ts_us}, offset

    def _insert(self, relation_id: int, values: tuple[object, ...], lsn: int) -> None:
        """An Insert at `lsn` (the loop's path for it: `_event` without the message object)."""
        placed = self._place(lsn)
        if placed is None:
            return
        table = self.schema.by_relation.get(relation_id)
        if table is None:  # filtered out: its Relation message was not accepted
            return
        try:
            self.emitter.create(table, values, placed[0], placed[1])
        except (InterruptedError, psycopg.OperationalError):
            raise  # stopping, or a lost connection the task reconnects from
        except Exception as e:
            self._failed(placed[1], e)

    def _event(self, msg: Any, cls: type, lsn: int) -> None:
        """One Insert/Update/Delete/Truncate/Message at `lsn` of the current transaction."""
        placed = self._place(lsn, msg.prefix if cls is Message else None)
        if placed is None:
            return
        pos, offset = placed
        emitter = self.emitter
        try:
            if cls is Insert:
                table = self.schema.by_relation.get(msg.relation_id)
                if table is not None:  # None: filtered out, its Relation message was not accepted
                    emitter.create(table, msg.new.values, pos, offset)
            elif cls is Update:
                table = self.schema.by_relation.get(msg.relation_id)
                if table is not None:
                    old = msg.old.values if msg.old is not None else None
                    emitter.update(table, old, msg.old_is_key, msg.new.values, pos, offset)
            elif cls is Delete:
                table = self.schema.by_relation.get(msg.relation_id)
                if table is not None:
                    emitter.delete(table, msg.old.values, msg.old_is_key, pos, offset)
            else:
                self._dispatch(msg, pos, offset)
        except (InterruptedError, psycopg.OperationalError):
            raise  # stopping, or a lost connection the task reconnects from
        except Exception as e:
            self._failed(offset, e)

    def _failed(self, offset: dict[str, Any], e: Exception) -> None:
        """event.processing.failure.handling.mode for an event that could not become a record."""
        if self.failure_mode == "fail":
            raise e
        level = logging.WARNING if self.failure_mode == "warn" else logging.DEBUG
        log.log(
            level,
            "Error while processing event at offset %s (event.processing.failure.handling.mode=%s: the event "
            "is skipped): %s",
            offset, self.failure_mode, e,
        )  # fmt: skip

    def _on_commit(self, msg: Commit) -> None:
        self.last_commit_lsn = msg.commit_lsn
        if self.transactions is not None and self.transactions.active:
            # END carries the last event's position: it is covered, so never re-sent.
            self.emitter.emit(
                self.transactions.end(
                    (msg.commit_ts + PG_EPOCH_US) // 1000, self.emitter.partition, dict(self._last_offset)
                )
            )

    def _dispatch(self, msg: Any, pos: dict[str, Any], offset: dict[str, Any]) -> None:
        """A logical decoding message or a truncate (row events take `_event`'s inline path)."""
        if isinstance(msg, Message):
            self.emitter.message(self.message_topic, msg.prefix, msg.content, msg.transactional, pos, offset)
            return
        for rel in msg.relation_ids:
            table = self.schema.by_relation.get(rel)
            if table is not None:
                self.emitter.truncate(table, pos, offset)

    def _maybe_heartbeat(self) -> None:
        if self.heartbeat is None or not self._idle() or not self.heartbeat.due():
            return
        if self.heartbeat_query is not None:
            self.heartbeat_query()
        lsn = max(self.last_received_lsn, self.last_commit_lsn or 0)
        offset = {
            "lsn_proc": lsn,
            "lsn": lsn,
            "lsn_commit": lsn,
            "lsn_events_processed": 0,
            "ts_usec": time.time_ns() // 1000,
        }
        self.emitter.emit(self.heartbeat.record(self.emitter.partition, offset))


def _flush(buffer: list[Any], queue: ChangeEventQueue[Any]) -> None:
    """Hand the buffered records to the queue, a batch per call (it blocks while the queue is full)."""
    if buffer:
        step = queue.max_batch_size
        for i in range(0, len(buffer), step):
            queue.enqueue_many(buffer[i : i + step] if len(buffer) > step else buffer)
        buffer.clear()


__all__ = ["Position", "PostgresStreamingChangeEventSource", "pg_timestamp"]
