"""EventDispatcher: turns rows, DDL and heartbeats into SourceRecords, buffered until `poll()` takes them.

One place decides topics, keys, envelopes, tombstones, PK-change headers, skipped
operations and transaction blocks, so snapshot and streaming emit identical shapes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from cdc.api import Headers, SourceRecord, Struct
from cdc_debezium.envelope import Operation
from cdc_debezium.heartbeat import Heartbeat
from cdc_debezium.queue import approximate_size
from cdc_debezium.records import NEW_KEY_HEADER, OLD_KEY_HEADER, tombstone
from cdc_debezium.transaction import OFFSET_TRANSACTION_ID, TransactionMonitor
from cdc_mysql import schema_change
from cdc_mysql.config import MySqlConnectorConfig
from cdc_mysql.history import SchemaHistory
from cdc_mysql.schema import TableSchema
from cdc_mysql.source_info import SourceInfo
from cdc_mysql.table import TableDef, TableMeta

log = logging.getLogger(__name__)


class EventDispatcher:
    def __init__(
        self,
        config: MySqlConnectorConfig,
        source_info: SourceInfo,
        history: SchemaHistory,
        heartbeat: Heartbeat,
        transactions: TransactionMonitor | None,
    ) -> None:
        self.config = config
        # Debezium's skip.messages.without.change: an update leaving the captured columns as they were is dropped
        self.skip_unchanged = bool(config.get("skip.messages.without.change"))
        # Debezium's NumberOfUnchangedEventsSkipped: the updates so skipped, -1 when the option is off
        self.unchanged_skipped = 0 if self.skip_unchanged else -1
        self.source_info = source_info
        self.history = history
        self.heartbeat = heartbeat
        self.transactions = transactions
        self.partition = {"server": config.topic_prefix}
        self.skipped = config.skipped_operations
        self.tombstones = config.tombstones_on_delete
        self.schema_change_topic = config.topic_prefix
        self.schema_change_value_schema = schema_change.value_schema(source_info.schema)
        self.events = 0
        self.buffer: list[SourceRecord] = []
        # max.queue.size.in.bytes: the estimated size of the buffered records sized so far (buffered_bytes)
        self._bytes, self._sized = 0, 0
        self.on_heartbeat: Callable[[], None] | None = None

    def _put(self, record: SourceRecord) -> None:
        self.buffer.append(record)

    def take(self, n: int) -> list[SourceRecord]:
        """Up to `n` buffered records, oldest first (what one `poll()` returns)."""
        batch = self.buffer[:n]
        del self.buffer[:n]
        self.events += len(batch)
        self._bytes, self._sized = 0, 0  # what is left (rarely anything) is sized again when asked
        return batch

    def buffered_bytes(self) -> int:
        """The buffered records' estimated size (cdc_debezium.queue.approximate_size, Debezium's
        estimate of a queued record), each record sized once; asked only under max.queue.size.in.bytes."""
        buffer = self.buffer
        if self._sized > len(buffer):  # taken or dropped elsewhere: size what is there again
            self._bytes, self._sized = 0, 0
        for i in range(self._sized, len(buffer)):
            self._bytes += approximate_size(buffer[i])
        self._sized = len(buffer)
        return self._bytes

    # -- data change events ------------------------------------------------------------------
    def read(self, ts: TableSchema, row: dict[str, Any], source: Struct, offset: dict[str, Any]) -> None:
        value = ts.envelope.read(ts.value(row), source)
        self._put(
            SourceRecord(
                self.partition, offset, ts.topic, None, ts.key_schema, ts.key(row), ts.envelope.schema, value,
            )
        )  # fmt: skip

    def change(
        self,
        op: Operation,
        ts: TableSchema,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        source: Struct,
        offset: dict[str, Any],
        tx_id: str | None,
    ) -> None:
        code = op.value
        if code in self.skipped:
            return
        if (
            code == "u"
            and self.skip_unchanged
            and ts.value(before) == ts.value(after)
            and ts.key(before) == ts.key(after)
        ):
            self.unchanged_skipped += 1
            return
        env = ts.envelope
        ts_ms = source._values[3]
        tx = self._block(ts, tx_id, offset, ts_ms) if self.transactions is not None else None
        if code == "c":  # the hot path of inserts: no helper calls
            assert after is not None
            value = env.make("c", None, ts.value(after), source, tx)
            self.buffer.append(
                SourceRecord(self.partition, offset, ts.topic, None, ts.key_schema, ts.key(after), env.schema, value)
            )  # fmt: skip
            return
        if code == "d":
            assert before is not None
            self._emit(ts, ts.key(before), env.make("d", ts.value(before), None, source, tx), offset,
                       tombstone_after=True)  # fmt: skip
            return
        assert before is not None and after is not None
        old_key, new_key = ts.key(before), ts.key(after)
        if old_key == new_key:
            self._emit(ts, new_key, env.make("u", ts.value(before), ts.value(after), source, tx), offset)
            return
        # Primary key change: a delete of the old key, then a create of the new one.
        d_headers = Headers().add(NEW_KEY_HEADER, new_key, ts.key_schema)
        c_headers = Headers().add(OLD_KEY_HEADER, old_key, ts.key_schema)
        if "d" not in self.skipped:
            value = env.make("d", ts.value(before), None, source, tx)
            # The row is done only once its create is out. A poll batch may end after the delete
            # (or its tombstone); an offset stored there that counted the row would make a resumed
            # task skip the row, and the create would be lost. Resumed before the row, the task
            # emits the delete again (harmless) and then the create.
            d_offset = offset if "c" in self.skipped else _before_row(offset)
            self._emit(ts, old_key, value, d_offset, headers=d_headers, tombstone_after=True)
            if self.transactions is not None:
                offset = dict(offset)  # the create's offset counts one more event of the transaction
                tx = self._block(ts, tx_id, offset, ts_ms)
        if "c" not in self.skipped:
            self._emit(ts, new_key, env.make("c", None, ts.value(after), source, tx), offset, headers=c_headers)

    def truncate(self, ts: TableSchema, source: Struct, offset: dict[str, Any], tx_id: str | None) -> None:
        if "t" in self.skipped:
            return
        ts_ms = source._values[3]
        value = ts.envelope.truncate(source, self._block(ts, tx_id, offset, ts_ms))
        self._put(SourceRecord(self.partition, offset, ts.topic, None, None, None, ts.envelope.schema, value))

    def _block(self, ts: TableSchema, tx_id: str | None, offset: dict[str, Any], ts_ms: int) -> Struct | None:
        """The event's transaction block; BEGIN/END records when the transaction changes.

        Adds the open transaction to the event's `offset` (Debezium's `transaction_id` and
        `transaction_data_collection_order_<table>` keys), so a task resumed inside the
        transaction neither repeats its BEGIN nor restarts its counts.
        """
        tm = self.transactions
        if tm is None or tx_id is None:
            return None
        if tm.tx_id != tx_id:
            # END and BEGIN carry the position before this event: committing them must not skip it.
            before = _before_row(offset)
            if tm.active:
                self._put(tm.end(ts_ms, self.partition, before))
            self._put(tm.begin(tx_id, ts_ms, self.partition, {**before, OFFSET_TRANSACTION_ID: tx_id}))
        block = tm.block(ts.table.id)
        tm.store(offset)
        return block

    def _emit(
        self,
        ts: TableSchema,
        key: Struct | None,
        value: Struct,
        offset: dict[str, Any],
        headers: Headers | None = None,
        tombstone_after: bool = False,
    ) -> None:
        # No record timestamp, as Debezium's EventDispatcher: the producer stamps the send time,
        # so a catch-up of an old binlog is not written with times a broker's retention expires.
        record = SourceRecord(
            self.partition, offset, ts.topic, None, ts.key_schema, key, ts.envelope.schema, value, None, headers
        )
        self._put(record)
        if tombstone_after and self.tombstones:
            self._put(tombstone(record))

    def commit_transaction(self, ts_ms: int, offset: dict[str, Any]) -> None:
        tm = self.transactions
        if tm is not None and tm.active:
            self._put(tm.end(ts_ms, self.partition, offset))

    # -- schema changes ----------------------------------------------------------------------
    def schema_change(
        self,
        db: str,
        ddl: str,
        source: Struct,
        offset: dict[str, Any],
        changes: list[tuple[str, str, TableDef | None, TableMeta | None]],
        emit: bool = True,
    ) -> None:
        """History record always; a schema change event unless include.schema.changes=false.

        `changes` are (type, id, definition, information_schema metadata); both carry the table
        document Debezium writes (JsonTableChangeSerializer / ConnectTableChangeSerializer).
        """
        documents = [
            (kind, table_id, schema_change.table_document(t, meta) if t is not None else None)
            for kind, table_id, t, meta in changes
        ]
        self.history.record(
            {
                "source": dict(self.partition),
                "position": offset,
                "ts_ms": int(time.time() * 1000),
                "databaseName": db,
                "schemaName": None,
                "ddl": ddl,
                "tableChanges": [
                    {"type": kind, "id": table_id, **({"table": doc} if doc is not None else {})}
                    for kind, table_id, doc in documents
                ],
            }
        )
        if not (emit and self.config.include_schema_changes):
            return
        key = Struct(schema_change.KEY_SCHEMA).put("databaseName", db)
        value = (
            Struct(self.schema_change_value_schema)
            .put("source", source)
            .put("ts_ms", int(time.time() * 1000))
            .put("databaseName", db)
            .put("ddl", ddl)
            .put(
                "tableChanges",
                [
                    Struct(schema_change.CHANGE_SCHEMA)
                    .put("type", kind)
                    .put("id", table_id)
                    .put("table", schema_change.table_struct(doc) if doc is not None else None)
                    for kind, table_id, doc in documents
                ],
            )
        )
        self._put(
            SourceRecord(
                self.partition, offset, self.schema_change_topic, None, schema_change.KEY_SCHEMA, key,
                self.schema_change_value_schema, value,
            )
        )  # fmt: skip

    # -- heartbeats --------------------------------------------------------------------------
    def heartbeat_now(self, offset: dict[str, Any]) -> None:
        """A heartbeat record with `offset` now, whatever heartbeat.interval.ms says: a position the
        runtime must store although no change carries it (streaming.Stream._marked)."""
        self._put(self.heartbeat.record(self.partition, offset))

    def maybe_heartbeat(self, offset_fn: Any) -> None:
        if self.heartbeat.due():
            if self.on_heartbeat is not None:
                self.on_heartbeat()
            self._put(self.heartbeat.record(self.partition, offset_fn()))


def _before_row(offset: dict[str, Any]) -> dict[str, Any]:
    """The offset of the position just before the row `offset` was written for (`row` counts it)."""
    out = dict(offset)
    row = int(out.get("row", 0) or 0) - 1
    if row > 0:
        out["row"] = row
    else:
        out.pop("row", None)
    return out
