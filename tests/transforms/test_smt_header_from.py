"""HeaderFrom$Key / $Value, as Kafka's HeaderFromTest asserts it: every case schemaless and with a schema."""

from dataclasses import dataclass, field
from typing import Any

import pytest

from cdc.api import ConfigException, Headers, Schema, SchemaBuilder, SourceRecord, Struct
from cdc.transforms.header_from import HeaderFrom, HeaderFromKey, HeaderFromValue

STRING = Schema.STRING_SCHEMA


def opt_default() -> Schema:
    return SchemaBuilder.string().default_value("default").optional().build()


@dataclass
class Rec:
    """Kafka's RecordBuilder: fields of the key/value plus the record's headers."""

    fields: list[tuple[str, Schema, Any]] = field(default_factory=list)
    headers: list[tuple[str, Schema, Any]] = field(default_factory=list)

    def field(self, name: str, schema: Schema, value: Any) -> "Rec":
        self.fields.append((name, schema, value))
        return self

    def header(self, name: str, schema: Schema, value: Any) -> "Rec":
        self.headers.append((name, schema, value))
        return self

    def _record(self, key_side: bool, schema: Schema | None, data: Any, headers: Headers) -> SourceRecord:
        return SourceRecord(
            {"foo": "bar"},
            {"baz": "quxx"},
            "topic",
            0,
            schema if key_side else None,
            data if key_side else "key",
            None if key_side else schema,
            "value" if key_side else data,
            0,
            headers,
        )

    def schemaless(self, key_side: bool) -> SourceRecord:
        # Schemaless headers carry no schema.
        headers = Headers([])
        for name, _, value in self.headers:
            headers.add(name, value, None)
        return self._record(key_side, None, {n: v for n, _, v in self.fields}, headers)

    def with_schema(self, key_side: bool) -> SourceRecord:
        builder = SchemaBuilder.struct()
        for name, schema, _ in self.fields:
            builder.field(name, schema)
        schema = builder.build()
        struct = Struct(schema)
        for name, _, value in self.fields:
            struct.put(name, value)
        headers = Headers([])
        for name, hschema, value in self.headers:
            headers.add(name, value, hschema)
        return self._record(key_side, schema, struct, headers)


def base() -> Rec:
    return Rec().field("field1", STRING, "field1-value").field("field2", STRING, "field2-value")


_STRUCT_SCHEMA = SchemaBuilder.struct().field("foo", STRING).build()
_STRUCT = Struct(_STRUCT_SCHEMA).put("foo", "foo-value")

CASES = [
    (
        "basic copy",
        base().header("header1", STRING, "existing-value"),
        ["field1"],
        ["inserted1"],
        "copy",
        True,
        base().header("header1", STRING, "existing-value").header("inserted1", STRING, "field1-value"),
    ),
    (
        "basic move",
        base().header("header1", STRING, "existing-value"),
        ["field1"],
        ["inserted1"],
        "move",
        True,
        Rec()
        .field("field2", STRING, "field2-value")
        .header("header1", STRING, "existing-value")
        .header("inserted1", STRING, "field1-value"),
    ),
    (
        "copy with preexisting header",
        base().header("inserted1", STRING, "existing-value"),
        ["field1"],
        ["inserted1"],
        "copy",
        True,
        base().header("inserted1", STRING, "existing-value").header("inserted1", STRING, "field1-value"),
    ),
    (
        "move with preexisting header",
        base().header("inserted1", STRING, "existing-value"),
        ["field1"],
        ["inserted1"],
        "move",
        True,
        Rec()
        .field("field2", STRING, "field2-value")
        .header("inserted1", STRING, "existing-value")
        .header("inserted1", STRING, "field1-value"),
    ),
    (
        "copy with struct value",
        Rec()
        .field("field1", _STRUCT_SCHEMA, _STRUCT)
        .field("field2", STRING, "field2-value")
        .header("header1", STRING, "existing-value"),
        ["field1"],
        ["inserted1"],
        "copy",
        True,
        Rec()
        .field("field1", _STRUCT_SCHEMA, _STRUCT)
        .field("field2", STRING, "field2-value")
        .header("header1", STRING, "existing-value")
        .header("inserted1", _STRUCT_SCHEMA, _STRUCT),
    ),
    (
        "move with struct value",
        Rec()
        .field("field1", _STRUCT_SCHEMA, _STRUCT)
        .field("field2", STRING, "field2-value")
        .header("header1", STRING, "existing-value"),
        ["field1"],
        ["inserted1"],
        "move",
        True,
        Rec()
        .field("field2", STRING, "field2-value")
        .header("header1", STRING, "existing-value")
        .header("inserted1", _STRUCT_SCHEMA, _STRUCT),
    ),
    (
        "two headers from same field",
        base().header("header1", STRING, "existing-value"),
        ["field1", "field1"],
        ["inserted1", "inserted2"],
        "move",
        True,
        Rec()
        .field("field2", STRING, "field2-value")
        .header("header1", STRING, "existing-value")
        .header("inserted1", STRING, "field1-value")
        .header("inserted2", STRING, "field1-value"),
    ),
    (
        "two fields to same header",
        base().header("header1", STRING, "existing-value"),
        ["field1", "field2"],
        ["inserted1", "inserted1"],
        "move",
        True,
        Rec()
        .header("header1", STRING, "existing-value")
        .header("inserted1", STRING, "field1-value")
        .header("inserted1", STRING, "field2-value"),
    ),
    (
        "copy null field without default",
        Rec()
        .field("field1", opt_default(), "field1-value")
        .field("field2", opt_default(), None)
        .header("header1", STRING, "existing-value"),
        ["field1", "field2"],
        ["inserted1", "inserted2"],
        "copy",
        False,
        Rec()
        .field("field1", opt_default(), "field1-value")
        .field("field2", opt_default(), None)
        .header("header1", STRING, "existing-value")
        .header("inserted1", opt_default(), "field1-value")
        .header("inserted2", opt_default(), None),
    ),
    (
        "move null field without default",
        Rec()
        .field("field1", opt_default(), "field1-value")
        .field("field2", opt_default(), None)
        .header("header1", STRING, "existing-value"),
        ["field1", "field2"],
        ["inserted1", "inserted2"],
        "move",
        False,
        Rec()
        .header("header1", STRING, "existing-value")
        .header("inserted1", opt_default(), "field1-value")
        .header("inserted2", opt_default(), None),
    ),
]
PARAMS = [
    pytest.param(key_side, *case[1:], id=f"{case[0]}-{'key' if key_side else 'value'}")
    for case in CASES
    for key_side in (True, False)
]


def xform(
    key_side: bool, fields: list[str], headers: list[str], operation: str, replace: bool
) -> HeaderFrom[SourceRecord]:
    t: HeaderFrom[SourceRecord] = HeaderFromKey() if key_side else HeaderFromValue()
    t.configure({"fields": fields, "headers": headers, "operation": operation, "replace.null.with.default": replace})
    return t


def assert_same_record(expected: SourceRecord, actual: SourceRecord | None) -> None:
    assert actual is not None
    assert (actual.source_partition, actual.source_offset, actual.topic, actual.kafka_partition) == (
        expected.source_partition,
        expected.source_offset,
        expected.topic,
        expected.kafka_partition,
    )
    assert actual.key_schema == expected.key_schema and actual.key == expected.key
    assert actual.value_schema == expected.value_schema and actual.value == expected.value
    assert actual.timestamp == expected.timestamp
    assert actual.headers == expected.headers


@pytest.mark.parametrize(("key_side", "original", "fields", "headers", "operation", "replace", "expected"), PARAMS)
def test_schemaless(
    key_side: bool, original: Rec, fields: list[str], headers: list[str], operation: str, replace: bool, expected: Rec
) -> None:
    record = original.schemaless(key_side)
    out = xform(key_side, fields, headers, operation, replace).apply(record)
    assert_same_record(expected.schemaless(key_side), out)


@pytest.mark.parametrize(("key_side", "original", "fields", "headers", "operation", "replace", "expected"), PARAMS)
def test_with_schema(
    key_side: bool, original: Rec, fields: list[str], headers: list[str], operation: str, replace: bool, expected: Rec
) -> None:
    record = original.with_schema(key_side)
    before = list(record.headers)
    out = xform(key_side, fields, headers, operation, replace).apply(record)
    assert_same_record(expected.with_schema(key_side), out)
    assert list(record.headers) == before  # the input record's headers are not changed


@pytest.mark.parametrize("key_side", [True, False])
@pytest.mark.parametrize(("headers", "fields"), [(["foo"], ["foo", "bar"]), (["foo", "bar"], ["foo"]), ([], [])])
def test_invalid_config(key_side: bool, headers: list[str], fields: list[str]) -> None:
    with pytest.raises(ConfigException) as info:
        xform(key_side, fields, headers, "copy", True)
    assert "\n" not in str(info.value) and ("headers" in str(info.value) or "fields" in str(info.value))


def test_unknown_operation_names_the_key() -> None:
    with pytest.raises(ConfigException, match="configuration operation: String must be one of: move, copy"):
        xform(False, ["a"], ["b"], "cut", True)
