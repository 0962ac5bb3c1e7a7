import datetime

import pytest

from cdc.api import (
    ConfigException,
    DataException,
    Schema,
    SchemaBuilder,
    SinkRecord,
    SourceRecord,
    Struct,
    Timestamp,
)
from cdc.transforms.insert_field import InsertFieldKey, InsertFieldValue

ALL_FIELDS = {
    "topic.field": "topic_field!",
    "partition.field": "partition_field",
    "timestamp.field": "timestamp_field?",
    "static.field": "instance_id",
    "static.value": "my-instance-id",
}
SIMPLE = SchemaBuilder.struct().name("name").version(1).doc("doc").field("magic", Schema.OPTIONAL_INT64_SCHEMA).build()


def value_xform(**extra: str) -> InsertFieldValue:
    xform: InsertFieldValue = InsertFieldValue()
    xform.configure({**ALL_FIELDS, **extra})
    return xform


def test_struct_value_gets_fields_and_schema_is_copied_and_cached() -> None:
    xform = value_xform()
    record = SourceRecord(None, None, "test", 0, None, None, SIMPLE, Struct(SIMPLE).put("magic", 42), 789)
    out = xform.apply(record)
    assert out is not None
    schema, value = out.value_schema, out.value
    assert isinstance(value, Struct) and schema is not None
    assert (schema.name, schema.version, schema.doc) == ("name", 1, "doc")
    assert schema.field("magic").schema == Schema.OPTIONAL_INT64_SCHEMA  # type: ignore[union-attr]
    assert schema.field("topic_field").schema == Schema.STRING_SCHEMA  # type: ignore[union-attr]
    assert schema.field("partition_field").schema == Schema.OPTIONAL_INT32_SCHEMA  # type: ignore[union-attr]
    assert schema.field("timestamp_field").schema == Timestamp.builder().optional().build()  # type: ignore[union-attr]
    assert schema.field("instance_id").schema == Schema.OPTIONAL_STRING_SCHEMA  # type: ignore[union-attr]
    assert value.get("magic") == 42
    assert value.get("topic_field") == "test"
    assert value.get("partition_field") == 0
    # A Connect Timestamp logical value, i.e. a datetime at the record's epoch millis.
    assert value.get("timestamp_field") == datetime.datetime(1970, 1, 1, 0, 0, 0, 789000, tzinfo=datetime.UTC)
    assert value.get("instance_id") == "my-instance-id"

    again = xform.apply(SourceRecord(None, None, "test", 1, None, None, SIMPLE, Struct(SIMPLE)))
    assert again is not None and again.value_schema is schema  # cached per input schema


def test_schemaless_value() -> None:
    record = SourceRecord(None, None, "test", 0, None, None, None, {"magic": 42}, 123)
    out = value_xform().apply(record)
    assert out is not None
    assert out.value == {
        "magic": 42,
        "topic_field": "test",
        "partition_field": 0,
        "timestamp_field": 123,  # schemaless keeps raw millis, as Kafka does
        "instance_id": "my-instance-id",
    }
    assert record.value == {"magic": 42}  # input untouched


@pytest.mark.parametrize("schema", [None, SIMPLE])
def test_tombstone_value_passes_through_unchanged(schema: Schema | None) -> None:
    record = SourceRecord(None, None, "test", 0, None, None, schema, None)
    assert value_xform().apply(record) is record


def test_key_variant_inserts_into_key_even_for_tombstones() -> None:
    xform: InsertFieldKey = InsertFieldKey()
    xform.configure(ALL_FIELDS)
    record = SourceRecord(None, None, "test", 0, None, {"magic": 42}, None, None)
    out = xform.apply(record)
    assert out is not None
    assert out.key == {"magic": 42, "topic_field": "test", "partition_field": 0, "instance_id": "my-instance-id"}
    assert out.value is None


def test_key_variant_with_schema() -> None:
    xform: InsertFieldKey = InsertFieldKey()
    xform.configure({"topic.field": "t"})
    key_schema = SchemaBuilder.struct().field("id", Schema.INT32_SCHEMA).build()
    out = xform.apply(SourceRecord(None, None, "orders", None, key_schema, Struct(key_schema).put("id", 7), None, "v"))
    assert out is not None and out.key.to_dict() == {"id": 7, "t": "orders"}
    assert out.value == "v"


def test_null_key_leaves_record_unchanged() -> None:
    xform: InsertFieldKey = InsertFieldKey()
    xform.configure(ALL_FIELDS)
    record = SourceRecord(None, None, "test", 0, None, None, None, {"magic": 42})
    assert xform.apply(record) is record


def test_offset_only_for_sink_records() -> None:
    xform = value_xform(**{"offset.field": "off!"})
    sink = SinkRecord("t", 3, None, None, None, {"a": 1}, 41)
    out = xform.apply(sink)
    assert out is not None and out.value["off"] == 41 and isinstance(out, SinkRecord)
    message = r"Only SinkRecord supported for \[field insertion\], found: cdc.api.records.SourceRecord"
    with pytest.raises(DataException, match=message):
        xform.apply(SourceRecord(None, None, "t", 0, None, None, None, {"a": 1}))


def test_required_offset_field_schema() -> None:
    xform: InsertFieldValue = InsertFieldValue()
    xform.configure({"offset.field": "off!"})
    out = xform.apply(SinkRecord("t", 0, None, None, SIMPLE, Struct(SIMPLE), 5))
    assert out is not None and out.value_schema.field("off").schema == Schema.INT64_SCHEMA  # type: ignore[union-attr]


def test_missing_partition_and_timestamp_are_left_null() -> None:
    xform = value_xform()
    out = xform.apply(SourceRecord(None, None, "t", None, None, None, SIMPLE, Struct(SIMPLE), None))
    assert out is not None
    assert out.value.get("partition_field") is None and out.value.get("timestamp_field") is None


def test_non_struct_value_with_schema_is_a_data_exception() -> None:
    with pytest.raises(DataException, match=r"Only Struct objects supported for \[field insertion\], found: int"):
        value_xform().apply(SourceRecord(None, None, "", 0, None, None, Schema.INT32_SCHEMA, 42))


def test_non_map_schemaless_value_is_a_data_exception() -> None:
    with pytest.raises(DataException, match=r"Only Map objects supported in absence of schema for \[field insertion\]"):
        value_xform().apply(SourceRecord(None, None, "", 0, None, None, None, "text"))


def test_replace_null_with_default() -> None:
    schema = SchemaBuilder.struct().field("d", SchemaBuilder.int32().optional().default_value(5).build()).build()
    record = SourceRecord(None, None, "t", 0, None, None, schema, Struct(schema))
    on = value_xform().apply(record)
    off = value_xform(**{"replace.null.with.default": "false"}).apply(record)
    assert on is not None and off is not None
    assert on.value.get_without_default("d") == 5
    assert off.value.get_without_default("d") is None


@pytest.mark.parametrize(
    ("configs", "key", "fragment"),
    [
        ({}, None, "No field insertion configured"),
        ({"static.field": "s"}, "static.value", "No value specified for static field: s"),
        ({"topic.field": "!"}, "topic.field", "field name is empty"),
        ({"topic.field": "t", "replace.null.with.default": "maybe"}, "replace.null.with.default", "true or false"),
    ],
)
def test_config_errors(configs: dict[str, str], key: str | None, fragment: str) -> None:
    with pytest.raises(ConfigException, match=fragment) as info:
        InsertFieldValue().configure(configs)
    assert info.value.name == key
