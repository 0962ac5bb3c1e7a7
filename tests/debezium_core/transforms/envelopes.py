"""Change events shaped as Debezium's AbstractExtractStateTest builds them, for the SMT tests."""

from __future__ import annotations

from typing import Any

from cdc.api import Headers, Schema, SchemaBuilder, SourceRecord, Struct
from cdc_debezium.envelope import TRANSACTION_BLOCK_SCHEMA, Envelope
from cdc_debezium.heartbeat import KEY_SCHEMA as HEARTBEAT_KEY_SCHEMA
from cdc_debezium.heartbeat import VALUE_SCHEMA as HEARTBEAT_VALUE_SCHEMA

TS_NS = 1_710_032_523_000_123_456

ROW = (
    SchemaBuilder.struct()
    .name("dummy.Value")
    .optional()
    .field("id", SchemaBuilder.int8().parameter("__debezium.source.column.name", "id").build())
    .field("name", Schema.STRING_SCHEMA)
    .build()
)
ROW_WITH_DEFAULT = (
    SchemaBuilder.struct()
    .name("dummy.Value")
    .optional()
    .field("id", Schema.INT8_SCHEMA)
    .field("name", SchemaBuilder.string().optional().default_value("default_str").build())
    .build()
)
KEY = SchemaBuilder.struct().name("dummy.Key").field("id", Schema.INT8_SCHEMA).build()
SOURCE = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.test.Source")
    .field("lsn", Schema.INT32_SCHEMA)
    .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
    .field("ts_us", Schema.OPTIONAL_INT64_SCHEMA)
    .field("ts_ns", Schema.OPTIONAL_INT64_SCHEMA)
    .field("db", Schema.OPTIONAL_STRING_SCHEMA)
    .field("table", Schema.OPTIONAL_STRING_SCHEMA)
    .field("file", Schema.OPTIONAL_STRING_SCHEMA)
    .field("pos", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)
ENVELOPE = Envelope.define("dummy.Envelope", ROW, SOURCE)
ENVELOPE_WITH_DEFAULT = Envelope.define("dummy.Envelope", ROW_WITH_DEFAULT, SOURCE)


def row(id: int = 1, name: str | None = "myRecord", schema: Schema = ROW) -> Struct:
    out = Struct(schema).put("id", id)
    return out.put("name", name) if name is not None else out


def source(lsn: int = 1234, **extra: Any) -> Struct:
    values = {"db": "test_db", "table": "test_table", "ts_ms": 1588252618953, "file": "binlog.000003", "pos": 4711}
    values.update(extra)
    out = Struct(SOURCE).put("lsn", lsn)
    for k, v in values.items():
        out.put(k, v)
    return out


def transaction(id: str = "571", total: int = 42) -> Struct:
    return Struct(TRANSACTION_BLOCK_SCHEMA).put("id", id).put("total_order", total).put("data_collection_order", total)


def record(
    value: Struct | None,
    envelope: Envelope = ENVELOPE,
    key: Struct | None = None,
    topic: str = "dummy",
    headers: Headers | None = None,
) -> SourceRecord:
    return SourceRecord(
        {"server": "dummy"},
        {"pos": 1},
        topic,
        None,
        key.schema if key is not None else None,
        key,
        envelope.schema if value is not None else None,
        value,
        1_700_000_000_000,
        headers,
    )


def create(after: Struct | None = None, envelope: Envelope = ENVELOPE, **kw: Any) -> SourceRecord:
    value = envelope.make("c", None, after if after is not None else row(), source(), None, TS_NS)
    return record(value, envelope, **kw)


def update(
    before: Struct | None = None, after: Struct | None = None, envelope: Envelope = ENVELOPE, **kw: Any
) -> SourceRecord:
    value = envelope.make(
        "u",
        before if before is not None else row(),
        after if after is not None else row(name="updatedRecord"),
        source(),
        transaction(),
        TS_NS,
    )
    return record(value, envelope, **kw)


def delete(before: Struct | None = None, envelope: Envelope = ENVELOPE, **kw: Any) -> SourceRecord:
    value = envelope.make("d", before if before is not None else row(), None, source(), None, TS_NS)
    return record(value, envelope, **kw)


def truncate() -> SourceRecord:
    return record(ENVELOPE.make("t", None, None, source(), None, TS_NS))


def tombstone(key: Struct | None = None) -> SourceRecord:
    return record(None, key=key)


def heartbeat() -> SourceRecord:
    key = Struct(HEARTBEAT_KEY_SCHEMA).put("serverName", "dummy")
    value = Struct(HEARTBEAT_VALUE_SCHEMA).put("ts_ms", 1)
    return SourceRecord(
        {"server": "dummy"}, None, "__debezium-heartbeat.dummy", None, key.schema, key, value.schema, value
    )


SCHEMA_CHANGE = (
    SchemaBuilder.struct()
    .name("io.debezium.connector.mysql.SchemaChangeValue")
    .field("databaseName", Schema.STRING_SCHEMA)
    .field("ddl", Schema.STRING_SCHEMA)
    .build()
)


def schema_change() -> SourceRecord:
    value = Struct(SCHEMA_CHANGE).put("databaseName", "inventory").put("ddl", "ALTER TABLE t ADD c INT")
    return SourceRecord({"server": "dummy"}, {"pos": 2}, "dummy", None, None, None, SCHEMA_CHANGE, value)


def header(record: SourceRecord, name: str) -> Any:
    found = record.headers.last_with_name(name)
    return None if found is None else found.value


def chain(config: dict[str, str]) -> Any:
    """A transformation chain built as the runtime builds it, resolving plugins by discovery."""
    from cdc.runtime.plugins import PluginKind, PluginRegistry
    from cdc.transforms import build_transformation_chain

    registry = PluginRegistry.discover()
    kinds = {"transform": [PluginKind.TRANSFORMATION], "predicate": [PluginKind.PREDICATE]}
    return build_transformation_chain(config, lambda kind, name: registry.resolve(name, kinds[kind]).cls)


def assert_one_line_config_error(config: dict[str, str], key: str) -> str:
    """Building the chain fails with one line naming `key` (`transforms.<alias>.<key>`)."""
    import pytest

    from cdc.api import ConfigException

    with pytest.raises(ConfigException) as e:
        chain(config)
    assert e.value.name == key, str(e.value)
    assert key in str(e.value) and "\n" not in str(e.value)
    return str(e.value)
