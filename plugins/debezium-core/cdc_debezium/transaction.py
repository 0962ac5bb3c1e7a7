"""Transaction metadata: BEGIN/END records on `<prefix>.transaction` and each event's `transaction` block."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from cdc.api import Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium.envelope import TRANSACTION_BLOCK_SCHEMA

DATA_COLLECTION_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.common.TransactionMetadataDataCollection")
    .field("data_collection", Schema.STRING_SCHEMA)
    .field("event_count", Schema.INT64_SCHEMA)
    .build()
)
KEY_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.common.TransactionMetadataKey")
    .field("id", Schema.STRING_SCHEMA)
    .build()
)
VALUE_SCHEMA = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.common.TransactionMetadataValue")
    .version(1)
    .field("status", Schema.STRING_SCHEMA)
    .field("id", Schema.STRING_SCHEMA)
    .field("event_count", Schema.OPTIONAL_INT64_SCHEMA)
    .field("data_collections", SchemaBuilder.array(DATA_COLLECTION_SCHEMA).optional().build())
    .field("ts_ms", Schema.INT64_SCHEMA)
    .build()
)


# Debezium's TransactionContext offset keys: the open transaction and its per-collection counts.
OFFSET_TRANSACTION_ID = "transaction_id"
OFFSET_COLLECTION_ORDER_PREFIX = "transaction_data_collection_order_"


class TransactionMonitor:
    """Tracks the open transaction's id and per-table counts, like Debezium's TransactionContext."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.tx_id: str | None = None
        self.total = 0
        self.per_collection: OrderedDict[str, int] = OrderedDict()

    def begin(self, tx_id: str, ts_ms: int, partition: dict[str, Any], offset: dict[str, Any]) -> SourceRecord:
        self.tx_id = tx_id
        self.total = 0
        self.per_collection = OrderedDict()
        return self._record("BEGIN", ts_ms, partition, offset)

    def block(self, data_collection: str) -> Struct:
        """The `transaction` block of the next event in `data_collection` (counts it)."""
        assert self.tx_id is not None
        self.total += 1
        n = self.per_collection.get(data_collection, 0) + 1
        self.per_collection[data_collection] = n
        return (
            Struct(TRANSACTION_BLOCK_SCHEMA)
            .put("id", self.tx_id)
            .put("total_order", self.total)
            .put("data_collection_order", n)
        )

    def end(self, ts_ms: int, partition: dict[str, Any], offset: dict[str, Any]) -> SourceRecord:
        record = self._record("END", ts_ms, partition, offset)
        self.tx_id = None
        return record

    @property
    def active(self) -> bool:
        return self.tx_id is not None

    def store(self, offset: dict[str, Any]) -> dict[str, Any]:
        """Adds the open transaction to `offset` (in place), so a resume knows its BEGIN was sent."""
        if self.tx_id is not None:
            offset[OFFSET_TRANSACTION_ID] = self.tx_id
            for collection, n in self.per_collection.items():
                offset[OFFSET_COLLECTION_ORDER_PREFIX + collection] = n
        return offset

    def restore(self, offset: Mapping[str, Any]) -> None:
        """Continues the transaction a stored offset was written in (no second BEGIN, counts go on)."""
        tx_id = offset.get(OFFSET_TRANSACTION_ID)
        self.tx_id = str(tx_id) if tx_id else None
        prefix = OFFSET_COLLECTION_ORDER_PREFIX
        self.per_collection = OrderedDict(
            (key[len(prefix) :], int(n)) for key, n in offset.items() if key.startswith(prefix)
        )
        self.total = sum(self.per_collection.values())

    def _record(self, status: str, ts_ms: int, partition: dict[str, Any], offset: dict[str, Any]) -> SourceRecord:
        assert self.tx_id is not None
        key = Struct(KEY_SCHEMA).put("id", self.tx_id)
        value = Struct(VALUE_SCHEMA).put("status", status).put("id", self.tx_id).put("ts_ms", ts_ms)
        if status == "END":
            value.put("event_count", self.total)
            value.put(
                "data_collections",
                [
                    Struct(DATA_COLLECTION_SCHEMA).put("data_collection", dc).put("event_count", n)
                    for dc, n in self.per_collection.items()
                ],
            )
        return SourceRecord(partition, offset, self.topic, None, KEY_SCHEMA, key, VALUE_SCHEMA, value)
