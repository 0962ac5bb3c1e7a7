"""The fields every Debezium `source` block starts with, and the snapshot marker values."""

from __future__ import annotations

from enum import Enum

from cdc.api import Schema, SchemaBuilder
from cdc_debezium import logical_types

SNAPSHOT_ENUM_NAME = logical_types.ENUM


class SnapshotRecord(Enum):
    """The `source.snapshot` marker: where a record sits within a snapshot."""

    TRUE = "true"
    FIRST = "first"
    FIRST_IN_DATA_COLLECTION = "first_in_data_collection"
    LAST_IN_DATA_COLLECTION = "last_in_data_collection"
    LAST = "last"
    FALSE = "false"
    INCREMENTAL = "incremental"

    @classmethod
    def of(cls, *, first: bool, last: bool, first_in_table: bool, last_in_table: bool) -> SnapshotRecord:
        """The marker of an initial-snapshot record, by where it sits: `first`/`last` of the whole
        snapshot, `first_in_table`/`last_in_table` of its table. Debezium's precedence
        (RelationalSnapshotChangeEventSource.setSnapshotMarker): last > first >
        last_in_data_collection > first_in_data_collection > true, so a record that both starts
        and ends something is marked by what ends (sinks wait for `last`)."""
        if last:
            return cls.LAST
        if first:
            return cls.FIRST
        if last_in_table:
            return cls.LAST_IN_DATA_COLLECTION
        if first_in_table:
            return cls.FIRST_IN_DATA_COLLECTION
        return cls.TRUE


SNAPSHOT_SCHEMA = (
    SchemaBuilder.string()
    .optional()
    .name(SNAPSHOT_ENUM_NAME)
    .version(1)
    .parameter("allowed", ",".join(r.value for r in SnapshotRecord))
    .default_value(SnapshotRecord.FALSE.value)
    .build()
)


def common_source_schema_builder(connector: str) -> SchemaBuilder:
    """`version, connector, name, ts_ms, snapshot, db, sequence, ts_us, ts_ns` in Debezium's order.

    Connectors append their own fields and call `build()`.
    """
    return (
        SchemaBuilder.struct()
        .name(f"io.debezium.connector.{connector}.Source")
        .version(1)
        .field("version", Schema.STRING_SCHEMA)
        .field("connector", Schema.STRING_SCHEMA)
        .field("name", Schema.STRING_SCHEMA)
        .field("ts_ms", Schema.INT64_SCHEMA)
        .field("snapshot", SNAPSHOT_SCHEMA)
        .field("db", Schema.STRING_SCHEMA)
        .field("sequence", Schema.OPTIONAL_STRING_SCHEMA)
        .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
        .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
    )
