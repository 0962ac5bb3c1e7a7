"""Tombstones and the primary-key-change headers `__debezium.newkey` / `__debezium.oldkey`."""

from __future__ import annotations

from cdc.api import Headers, SourceRecord

NEW_KEY_HEADER = "__debezium.newkey"
OLD_KEY_HEADER = "__debezium.oldkey"


def tombstone(record: SourceRecord) -> SourceRecord:
    """Same key, null value: lets log compaction drop the deleted key."""
    return SourceRecord(
        record.source_partition,
        record.source_offset,
        record.topic,
        record.kafka_partition,
        record.key_schema,
        record.key,
        None,
        None,
        record.timestamp,
        Headers(list(record.headers)),
    )
