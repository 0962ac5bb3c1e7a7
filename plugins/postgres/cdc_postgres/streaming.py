"""PostgresStreamingChangeEventSource: pgoutput push streaming into Debezium change records.

Every record carries its position: the commit LSN of its transaction (`lsn_commit`), its
own LSN and how many events before it share that LSN (COPY writes several rows in one WAL
record). A restart asks the slot for `lsn_commit` and skips up to that position.
The slot's flushed LSN moves only when `confirm()` is called with a stored offset.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from cdc_debezium.heartbeat import Heartbeat
from cdc_debezium.transaction import TransactionMonitor
from cdc_postgres.change_records import PostgresChangeRecordEmitter
from cdc_postgres.pgoutput import (
    Begin,
    Commit,
    Delete,
    Insert,
    Message,
    PgOutputDecoder,
    Relation,
    Truncate,
    Update,
    pg_timestamp,
)
from cdc_postgres.replication import ReplicationConnection
from cdc_postgres.schema import PostgresSchema

log = logging.getLogger(__name__)

PG_EPOCH_US = 946_684_800_000_000


class Position:
    """Where the stream stands, and where a restart must skip to."""

    def __init__(self, lsn_commit: int | None, lsn: int | None, events: int = 0) -> None:
        self.lsn_commit = lsn_commit
        self.lsn = lsn
        self.events = events

    def covers(self, commit_lsn: int, lsn: int, events: int) -> bool:
        """True if an event at (commit_lsn, lsn, events-th at that lsn) was already emitted."""
        if self.lsn_commit is None or self.lsn is None or commit_lsn != self.lsn_commit:
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
        # The last emitted event, so a reconnect resumes right after it.
        self.emitted = Position(None, None)

    def confirm(self, lsn: int) -> None:
        """Called by the task once an offset holding `lsn` is stored (from another thread)."""
        with self._confirm_lock:
            self._confirm_lsn = max(self._confirm_lsn, lsn)

    def run(self, start_lsn: int, resume: Position, stop: threading.Event) -> None:
        rc = ReplicationConnection(self.dsn)
        try:
            rc.start(self.slot, [self.publication], start_lsn)
            self._loop(rc, resume, stop)
        finally:
            rc.close()

    def _loop(self, rc: ReplicationConnection, resume: Position, stop: threading.Event) -> None:
        decoder = PgOutputDecoder()
        tx: Begin | None = None
        same_lsn = (0, 0)  # (lsn, events seen at it)
        sent_confirm = 0
        last_status = time.monotonic()
        while not stop.is_set():
            with self._confirm_lock:
                confirm = self._confirm_lsn
            now = time.monotonic()
            if confirm > sent_confirm or now - last_status >= self.status_interval:
                rc.confirm(confirm)
                sent_confirm, last_status = confirm, now
            x = rc.read(0.2)
            if x is None:
                # A keepalive's walEnd is the walsender's sent position: every transaction that
                # committed before it has already arrived, so an idle heartbeat may stand there.
                self.last_received_lsn = max(self.last_received_lsn, rc.received_lsn)
                if self.heartbeat is not None and tx is None and self.heartbeat.due():
                    rc.send_status(reply_requested=True)  # ask for a fresh keepalive
                self._maybe_heartbeat(tx)
                continue
            self.last_received_lsn = max(self.last_received_lsn, x.wal_end)
            msg = decoder.decode(x.payload)
            if isinstance(msg, Begin):
                tx = msg
                continue
            if isinstance(msg, Commit):
                self.last_commit_lsn = msg.commit_lsn
                if self.transactions is not None and self.transactions.active:
                    # END carries the last event's position: it is covered, so never re-sent.
                    self.emitter.emit(
                        self.transactions.end(
                            (msg.commit_ts + PG_EPOCH_US) // 1000, self.emitter.partition, dict(self._last_offset)
                        )
                    )
                tx = None
                self._maybe_heartbeat(None)
                continue
            if isinstance(msg, Relation):
                if self.table_filter(f"{msg.namespace}.{msg.name}"):
                    self.schema.on_relation(msg)
                continue
            lsn = x.data_start
            same_lsn = (lsn, same_lsn[1] + 1) if same_lsn[0] == lsn else (lsn, 1)
            commit_lsn = tx.final_lsn if tx is not None else lsn
            if isinstance(msg, Message):
                if not self.message_filter(msg.prefix):
                    continue
                if tx is None:
                    commit_lsn = lsn
            if resume.covers(commit_lsn, lsn, same_lsn[1]):
                continue
            self.emitted = Position(commit_lsn, lsn, same_lsn[1])
            pos = {
                "lsn": lsn,
                "lsn_commit": commit_lsn,
                "tx_id": tx.xid if tx is not None else None,
                "ts_us": (tx.commit_ts + PG_EPOCH_US) if tx is not None else time.time_ns() // 1000,
            }
            offset = {
                "lsn_proc": lsn,
                "lsn": lsn,
                "lsn_commit": commit_lsn,
                "lsn_events_processed": same_lsn[1],
                "ts_usec": pos["ts_us"],
            }
            if pos["tx_id"] is not None:
                offset["txId"] = pos["tx_id"]
            if self.transactions is not None and tx is not None and not self.transactions.active:
                # BEGIN sits just before the first event, so a resume never skips that event.
                begin_offset = {**offset, "lsn_events_processed": same_lsn[1] - 1}
                self.emitter.emit(
                    self.transactions.begin(str(tx.xid), pos["ts_us"] // 1000, self.emitter.partition, begin_offset)
                )
            self._last_offset = offset
            self._dispatch(msg, pos, offset)

    def _dispatch(self, msg: Any, pos: dict[str, Any], offset: dict[str, Any]) -> None:
        if isinstance(msg, Message):
            self.emitter.message(self.message_topic, msg.prefix, msg.content, pos, offset)
            return
        if isinstance(msg, Truncate):
            for rel in msg.relation_ids:
                table = self.schema.by_relation.get(rel)
                if table is not None:
                    self.emitter.truncate(table, pos, offset)
            return
        table = self.schema.by_relation.get(msg.relation_id)
        if table is None:
            return  # filtered out: its Relation message was not accepted
        if isinstance(msg, Insert):
            self.emitter.create(table, msg.new.values, pos, offset)
        elif isinstance(msg, Update):
            old = msg.old.values if msg.old is not None else None
            self.emitter.update(table, old, msg.old_is_key, msg.new.values, pos, offset)
        elif isinstance(msg, Delete):
            self.emitter.delete(table, msg.old.values, msg.old_is_key, pos, offset)

    def _maybe_heartbeat(self, tx: Begin | None) -> None:
        if self.heartbeat is None or tx is not None or not self.heartbeat.due():
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


__all__ = ["Position", "PostgresStreamingChangeEventSource", "pg_timestamp"]
