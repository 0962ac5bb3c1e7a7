"""PostgresChangeRecordEmitter: Debezium change records (and tombstones) for one table event."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

from cdc.api import ConnectException, Headers, Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium.envelope import TRANSACTION_BLOCK_SCHEMA, Envelope, Operation
from cdc_debezium.records import NEW_KEY_HEADER, OLD_KEY_HEADER, tombstone
from cdc_postgres.pgoutput import UNCHANGED_TOAST
from cdc_postgres.reselect import ALL_EVENTS, ColumnReselector
from cdc_postgres.schema import TableSchema, row_expressions
from cdc_postgres.source_info import SOURCE_SCHEMA, SourceInfo, sequence

MESSAGE_KEY_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.postgresql.MessageKey")
    .field("prefix", Schema.STRING_SCHEMA)
    .build()
)
# The data collection a transactional logical decoding message counts in, for its `transaction` block
# and the END record's `data_collections`: one for every prefix (Debezium's LogicalDecodingMessageId).
MESSAGE_DATA_COLLECTION = "LOGICAL_DECODING_MESSAGE"


def _lacks_key(table: TableSchema, old: tuple, old_is_key: bool) -> bool:
    """True for a key-only old row (REPLICA IDENTITY INDEX) without a value for some required key column.

    Such columns are not part of the identity index; their nulls would become fallback values
    (0, "") in the key, as Debezium does, and a wrong key deletes or moves the wrong row.
    """
    if not old_is_key or table.key_schema is None:
        return False
    return any(not c.optional and _absent(old, c.index) for c in table.key_columns)


def _with_old_toast(new: tuple, old: tuple | None, old_is_key: bool) -> tuple:
    """The new row with its unchanged TOASTed values ('u') taken from a full old row.

    Under REPLICA IDENTITY FULL, PostgreSQL logs the old row with every value in full, but the
    new row still leaves unchanged TOASTed values out. Debezium fills them from the old row, so
    `after` carries the real value, not the placeholder; a key-only old row has nothing to give.
    """
    if old is None or old_is_key or not any(v is UNCHANGED_TOAST for v in new):
        return new
    return tuple(
        old[i] if v is UNCHANGED_TOAST and i < len(old) and old[i] is not None and old[i] is not UNCHANGED_TOAST else v
        for i, v in enumerate(new)
    )


def _absent(row: tuple, index: int) -> bool:
    return index >= len(row) or row[index] is None


def _message_block_schema(binary_mode: str) -> Schema:
    content = Schema.BYTES_SCHEMA if binary_mode == "bytes" else Schema.STRING_SCHEMA
    return (
        SchemaBuilder.struct()
        .name("io.debezium.connector.postgresql.Message")
        .optional()
        .field("prefix", Schema.STRING_SCHEMA)
        .field("content", content)
        .build()
    )


# The attributes SourceRecord's constructor sets; the compiled builders set them themselves while they are all there is.
_RECORD_FIELDS = frozenset(
    ("source_partition", "source_offset", "topic", "kafka_partition", "key_schema", "key", "value_schema", "value",
     "timestamp", "headers")
)  # fmt: skip
# SourceInfo.struct's field order (source_info.py): the per-change fields are filled in, the rest come from a template.
_SOURCE_FIELDS = ("version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us", "ts_ns", "schema",
                  "table", "txId", "lsn", "xmin")  # fmt: skip


def _record_slots() -> frozenset[str]:
    return frozenset(name for cls in SourceRecord.__mro__ for name in getattr(cls, "__slots__", ()))


# The record of one change, after its before/after/key/tx/headers are known: `_record` of `_source` and
# Envelope.make, with the Structs and the SourceRecord filled in place.
_RECORD_BODY = """\
    ts_us = pos['ts_us']
    lsn = pos.get('lsn')
    lsn_commit = pos.get('lsn_commit')
    src = new(Struct)
    src.schema = sschema
    src._values = [version, connector, name, ts_us // 1000, 'false', db,
        f'["{lsn_commit}","{lsn}"]' if lsn_commit is not None and lsn is not None else sequence(lsn_commit, lsn),
        ts_us, ts_us * 1000, schema_name, table_name, pos.get('tx_id'), lsn, None]
    ns = time_ns()
    ms = ns // 1000000
    value = new(Struct)
    value.schema = eschema
    value._values = [before, after, src, tx, op, ms, ns // 1000, ns]
    r = new(SourceRecord)
    r.source_partition = partition
    r.source_offset = offset
    r.topic = topic
    r.kafka_partition = None
    r.key_schema = kschema
    r.key = key
    r.value_schema = eschema
    r.value = value
    r.timestamp = ms
    r.headers = Headers() if headers is None else headers
    return r
"""


def _compile_events(emitter: PostgresChangeRecordEmitter, table: TableSchema) -> tuple[Any, Any] | None:
    """(`event`, `create`) of `table`, compiled once per table schema, or None.

    `event(op, before, after, key, pos, offset, headers, tx)` is the record `_record` would build from
    `_source` and Envelope.make, with the Structs and the SourceRecord filled in place (as cdc_mysql's
    snapshot_records does): the source block from a per-table template, only the position and times
    set per change. `create(values, pos, offset)` is `create`'s record from a row tuple in one call:
    the row's value and key as TableSchema's compiled builders make them, then the transaction
    block, in that order. None when SourceInfo or SourceRecord no longer have the shape this relies
    on (the emitter then takes its general path).
    """
    template = emitter.source.struct(table.schema_name, table.table_name, 0, "false", None, None, None)
    fields = tuple(f.name for f in template.schema.fields)
    if template.schema is not SOURCE_SCHEMA or fields != _SOURCE_FIELDS or _record_slots() != _RECORD_FIELDS:
        return None
    const = template._values
    ns: dict[str, Any] = {
        "new": object.__new__, "Struct": Struct, "SourceRecord": SourceRecord, "Headers": Headers,
        "time_ns": time.time_ns, "sequence": sequence, "sschema": SOURCE_SCHEMA, "eschema": table.envelope.schema,
        "kschema": table.key_schema, "vschema": table.value_schema, "topic": table.topic,
        "partition": emitter.partition, "version": const[0], "connector": const[1], "name": const[2], "db": const[5],
        "schema_name": const[9], "table_name": const[10], "emitter": emitter, "table_id": table.id,
        "width": table._width, "value_of": table.value_slow, "key_of": table.key_slow,
    }  # fmt: skip
    value_expr = row_expressions(table, "value", ns, "v")
    if table.key_schema is None:
        key_build = "        key = None\n"
    else:
        key_expr = row_expressions(table, "key", ns, "k")
        key_build = f"        key = new(Struct)\n        key.schema = kschema\n        key._values = [{key_expr}]\n"
    source = (
        "def event(op, before, after, key, pos, offset, headers, tx):\n"
        f"{_RECORD_BODY}"
        "\n"
        "def create(values, pos, offset):\n"
        "    if len(values) < width:\n"
        "        after = value_of(values)\n"
        "        key = key_of(values)\n"
        "    else:\n"
        "        after = new(Struct)\n"
        "        after.schema = vschema\n"
        f"        after._values = [{value_expr}]\n"
        f"{key_build}"
        "    tx = emitter.tx_block(table_id)\n"
        "    op = 'c'\n"
        "    before = None\n"
        "    headers = None\n"
        f"{_RECORD_BODY}"
    )
    exec(compile(source, f"<pg events {table.id}>", "exec"), ns)
    return ns["event"], ns["create"]


class PostgresChangeRecordEmitter:
    def __init__(
        self,
        server_name: str,
        source: SourceInfo,
        emit: Callable[[SourceRecord], None],
        skipped: set[str],
        tombstones: bool,
        binary_mode: str = "bytes",
        reselector: ColumnReselector | None = None,
    ) -> None:
        self.partition = {"server": server_name}
        # Reads the values pgoutput did not send from the table: for a key change's create, and
        # with reselect.scope=all for every create and update (None: events stay as decoded).
        self.reselector = reselector
        self._reselect_all = reselector if reselector is not None and reselector.settings.scope == ALL_EVENTS else None
        self.server_name = server_name
        self.source = source
        self.emit = emit
        self.skipped = skipped
        self.tombstones = tombstones
        self.binary_mode = binary_mode
        self._message_block = _message_block_schema(binary_mode)
        # Set by the streaming source when provide.transaction.metadata is on: the next
        # event's `transaction` block (it counts the event).
        self.tx_block: Callable[[str], Struct | None] = lambda _table: None
        # Per table schema (by identity): the compiled record builder of `_compile_events`, or None.
        self._events: dict[int, tuple[TableSchema, tuple[Any, Any] | None]] = {}
        self._message_envelope = (
            SchemaBuilder.struct()
            .name("io.debezium.connector.postgresql.MessageValue")
            .field("op", Schema.STRING_SCHEMA)
            .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
            .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
            .field("source", SOURCE_SCHEMA)
            .field("transaction", TRANSACTION_BLOCK_SCHEMA)
            .field("message", self._message_block)
            .build()
        )

    def _record(
        self,
        table: TableSchema,
        offset: dict[str, Any],
        key: Struct | None,
        value: Struct | None,
        headers: Headers | None = None,
    ) -> SourceRecord:
        ts = int(time.time() * 1000)
        return SourceRecord(
            self.partition,
            offset,
            table.topic,
            None,
            table.key_schema,
            key,
            table.envelope.schema if value is not None else None,
            value,
            ts,
            headers,
        )

    def _compiled(self, table: TableSchema) -> tuple[Any, Any] | None:
        """The table's (`event`, `create`) of `_compile_events`, compiled at its first change."""
        entry = self._events.get(id(table))
        if entry is None or entry[0] is not table:
            if len(self._events) >= 512:
                self._events.clear()  # schemas replaced by DDL or reconnects: never a growing cache
            entry = self._events[id(table)] = (table, _compile_events(self, table))
        return entry[1]

    def _change(
        self,
        table: TableSchema,
        op: str,
        before: Struct | None,
        after: Struct | None,
        key: Struct | None,
        pos: dict[str, Any],
        offset: dict[str, Any],
        tx: Struct | None,
        headers: Headers | None = None,
    ) -> SourceRecord:
        """A change record: the table's compiled builder, else `_record` of Envelope.make (the same record)."""
        compiled = self._compiled(table)
        if compiled is not None:
            return compiled[0](op, before, after, key, pos, offset, headers, tx)  # type: ignore[no-any-return]
        value = table.envelope.make(op, before, after, self._source(table, pos), tx)
        return self._record(table, offset, key, value, headers)

    def _source(self, table: TableSchema, pos: dict[str, Any], snapshot: str = "false") -> Struct:
        return self.source.struct(
            table.schema_name,
            table.table_name,
            pos["ts_us"],
            snapshot,
            pos.get("tx_id"),
            pos.get("lsn"),
            pos.get("lsn_commit"),
        )

    def read(self, table: TableSchema, values: tuple, pos: dict[str, Any], offset: dict[str, Any], marker: str) -> None:
        env: Envelope = table.envelope
        value = env.read(table.value(values), self._source(table, pos, marker))
        self.emit(self._record(table, offset, table.key(values), value))

    def create(self, table: TableSchema, new: tuple, pos: dict[str, Any], offset: dict[str, Any]) -> None:
        if "c" in self.skipped:
            return
        if self._reselect_all is not None:
            new = self._reselect_all.fill(table, new, pos.get("tx_id"))
        compiled = self._compiled(table)
        if compiled is not None:
            self.emit(compiled[1](new, pos, offset))
            return
        after = table.value(new)
        self.emit(self._change(table, "c", None, after, table.key(new), pos, offset, self.tx_block(table.id)))

    def update(
        self,
        table: TableSchema,
        old: tuple | None,
        old_is_key: bool,
        new: tuple,
        pos: dict[str, Any],
        offset: dict[str, Any],
    ) -> None:
        new = _with_old_toast(new, old, old_is_key)
        new_key = table.key(new)
        old_key = table.key(old) if old is not None and not _lacks_key(table, old, old_is_key) else None
        if old_key is not None and new_key is not None and old_key != new_key:
            # A primary-key change: delete (+ tombstone) of the old key, then create of the new one.
            # The event is done only once its create is out: an offset stored after the delete alone
            # must not count it, or a resumed task would skip the event and lose the create.
            d_offset = offset
            if "c" not in self.skipped and "lsn_events_processed" in offset:
                d_offset = {**offset, "lsn_events_processed": offset["lsn_events_processed"] - 1}
            self.delete(table, old, old_is_key, pos, d_offset, Headers().add(NEW_KEY_HEADER, new_key, table.key_schema))
            if "c" not in self.skipped:
                if self.reselector is not None:
                    # No one holds the new key's values: read what pgoutput did not send from the table.
                    new = self.reselector.fill(table, new, pos.get("tx_id"))
                value = table.envelope.create(table.value(new), self._source(table, pos), self.tx_block(table.id))
                self.emit(
                    self._record(
                        table, offset, new_key, value, Headers().add(OLD_KEY_HEADER, old_key, table.key_schema)
                    )
                )
            return
        if "u" in self.skipped:
            return
        if self._reselect_all is not None:
            new = self._reselect_all.fill(table, new, pos.get("tx_id"))
        before = table.value(old, only_key=old_is_key) if old is not None else None
        after = table.value(new)
        self.emit(self._change(table, "u", before, after, new_key, pos, offset, self.tx_block(table.id)))

    def delete(
        self,
        table: TableSchema,
        old: tuple,
        old_is_key: bool,
        pos: dict[str, Any],
        offset: dict[str, Any],
        headers: Headers | None = None,
    ) -> None:
        if "d" in self.skipped:
            return
        if _lacks_key(table, old, old_is_key):
            missing = ", ".join(c.name for c in table.key_columns if not c.optional and _absent(old, c.index))
            raise ConnectException(
                f"A DELETE on {table.id} cannot be keyed: its old row holds only the replica identity's "
                f"columns, not the message key column(s) {missing}, so the event would carry a made-up key and "
                f"consumers would delete the wrong row. Use REPLICA IDENTITY FULL or DEFAULT, an identity index "
                f"that contains {missing}, or key the topic by the index: "
                f"message.key.columns={table.id}:<index columns>"
            )
        key = table.key(old)
        before = table.value(old, only_key=old_is_key)
        record = self._change(table, "d", before, None, key, pos, offset, self.tx_block(table.id), headers)
        self.emit(record)
        if self.tombstones:
            self.emit(tombstone(record))

    def truncate(self, table: TableSchema, pos: dict[str, Any], offset: dict[str, Any]) -> None:
        if "t" in self.skipped:
            return
        value = table.envelope.truncate(self._source(table, pos), self.tx_block(table.id))
        ts = int(time.time() * 1000)
        self.emit(SourceRecord(self.partition, offset, table.topic, None, None, None, table.envelope.schema, value, ts))

    def message(
        self,
        topic: str,
        prefix: str,
        content: bytes,
        transactional: bool,
        pos: dict[str, Any],
        offset: dict[str, Any],
    ) -> None:
        """A logical decoding message's record. A transactional one is an event of its transaction (its
        `transaction` block, counted in the END record); a non-transactional one has no transaction, as
        in Debezium (pgoutput sends it without an xid)."""
        ns = time.time_ns()
        tx = self.tx_block(MESSAGE_DATA_COLLECTION) if transactional else None
        source = self.source.struct(
            "", "", pos["ts_us"], "false", pos.get("tx_id"), pos.get("lsn"), pos.get("lsn_commit")
        )
        payload: Any = content
        if self.binary_mode == "base64":
            payload = base64.b64encode(content).decode()
        elif self.binary_mode == "base64-url-safe":
            payload = base64.urlsafe_b64encode(content).decode()
        elif self.binary_mode == "hex":
            payload = content.hex()
        value = (
            Struct(self._message_envelope)
            .put("op", Operation.MESSAGE.value)
            .put("ts_ms", ns // 1_000_000)
            .put("ts_us", ns // 1000)
            .put("ts_ns", ns)
            .put("source", source)
            .put("transaction", tx)
            .put("message", Struct(self._message_block).put("prefix", prefix).put("content", payload))
        )
        key = Struct(MESSAGE_KEY_SCHEMA).put("prefix", prefix)
        self.emit(
            SourceRecord(
                self.partition,
                offset,
                topic,
                None,
                MESSAGE_KEY_SCHEMA,
                key,
                self._message_envelope,
                value,
                ns // 1_000_000,
            )
        )
