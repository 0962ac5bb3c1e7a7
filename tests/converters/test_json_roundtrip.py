"""JsonConverter round trips: to_connect_data(from_connect_data(x)) == x, examples and properties."""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc.api.data import Date, Decimal, Schema, SchemaAndValue, SchemaBuilder, Struct, Time, Timestamp, Type
from cdc.converters import JsonConverter
from cdc.converters import _json_encode as enc
from tests.support.examples import examples

TOPIC = "topic"
UTC = datetime.UTC


def converter(**configs: Any) -> JsonConverter:
    c = JsonConverter()
    c.configure({k.replace("_", "."): v for k, v in configs.items()}, False)
    return c


def roundtrip(schema: Schema | None, value: Any, **configs: Any) -> SchemaAndValue:
    c = converter(**configs)
    return c.to_connect_data(TOPIC, c.from_connect_data(TOPIC, schema, value))


# -- examples -----------------------------------------------------------------------------------
ROW = (
    SchemaBuilder.struct()
    .name("server1.db.t.Value")
    .optional()
    .field("id", Schema.INT64_SCHEMA)
    .field("name", Schema.OPTIONAL_STRING_SCHEMA)
    .field("price", Decimal.builder(2).optional().build())
    .field("seen", Timestamp.builder().optional().build())
    .field("day", Date.builder().optional().build())
    .field("at", Time.builder().optional().build())
    .field("ratio", Schema.OPTIONAL_FLOAT32_SCHEMA)
    .field("blob", Schema.OPTIONAL_BYTES_SCHEMA)
    .field("attrs", SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT16_SCHEMA).optional().build())
    .field("pairs", SchemaBuilder.map(Schema.INT8_SCHEMA, Schema.BOOLEAN_SCHEMA).optional().build())
    .build()
)
ENVELOPE = (
    SchemaBuilder.struct()
    .name("server1.db.t.Envelope")
    .version(1)
    .field("before", ROW)
    .field("after", ROW)
    .field("op", Schema.STRING_SCHEMA)
    .field("ts_ms", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)


def sample_row() -> Struct:
    return (
        Struct(ROW)
        .put("id", 2**40)
        .put("name", "Zoë")
        .put("price", decimal.Decimal("-12345678901234567890123456789012345.67"))
        .put("seen", datetime.datetime(2024, 2, 29, 23, 59, 59, 999000, tzinfo=UTC))
        .put("day", datetime.date(1969, 7, 20))
        .put("at", datetime.time(13, 37, 0, 1000))
        .put("ratio", 0.25)
        .put("blob", bytes(range(256)))
        .put("attrs", {"a": 1, "b": -2})
        .put("pairs", {1: True, -1: False})
    )


@pytest.mark.parametrize("decimal_format", ["BASE64", "NUMERIC"])
def test_debezium_like_envelope_roundtrip(decimal_format: str) -> None:
    value = Struct(ENVELOPE).put("after", sample_row()).put("op", "c").put("ts_ms", 1_700_000_000_000)
    back = roundtrip(ENVELOPE, value, decimal_format=decimal_format)
    assert back.schema == ENVELOPE
    assert back.value == value
    # Wide decimals keep every digit (the default decimal context would round to 28).
    assert back.value.get("after").get("price") == decimal.Decimal("-12345678901234567890123456789012345.67")


def test_reading_the_same_schema_twice_uses_the_cache_and_stays_correct() -> None:
    c = converter()
    first = Struct(ENVELOPE).put("after", sample_row()).put("op", "c")
    second = Struct(ENVELOPE).put("before", sample_row()).put("op", "d").put("ts_ms", 5)
    for value in (first, second, first):
        assert c.to_connect_data(TOPIC, c.from_connect_data(TOPIC, ENVELOPE, value)).value == value
    assert len(c._readers) == 1


def test_kafka_style_input_with_whitespace_and_other_key_order_is_read() -> None:
    # JsonConverterTest.structToConnect feeds pretty-printed JSON with "field" first.
    msg = (
        b'{ "schema": { "type": "struct", "fields": [{ "field": "field1", "type": "boolean" },'
        b' { "field": "field2", "type": "string" }] }, "payload": { "field1": true, "field2": "string" } }'
    )
    schema = SchemaBuilder.struct().field("field1", Schema.BOOLEAN_SCHEMA).field("field2", Schema.STRING_SCHEMA).build()
    assert converter().to_connect_data(TOPIC, msg) == SchemaAndValue(
        schema, Struct(schema).put("field1", True).put("field2", "string")
    )
    reordered = (
        b'{"payload":{"field1":false,"field2":"x"},"schema":{"type":"struct","fields":[{"field":"field1",'
        b'"type":"boolean"},{"field":"field2","type":"string"}]}}'
    )
    assert converter().to_connect_data(TOPIC, reordered).value == Struct(schema).put("field1", False).put("field2", "x")


@pytest.mark.parametrize(
    ("msg", "expected"),
    [
        # JsonConverterTest.testConnectSchemaMetadataTranslation
        (b'{ "schema": { "type": "boolean" }, "payload": true }', SchemaAndValue(Schema.BOOLEAN_SCHEMA, True)),
        (
            b'{ "schema": { "type": "boolean", "optional": true }, "payload": null }',
            SchemaAndValue(Schema.OPTIONAL_BOOLEAN_SCHEMA, None),
        ),
        (
            b'{ "schema": { "type": "boolean", "default": true }, "payload": null }',
            SchemaAndValue(SchemaBuilder.bool().default_value(True).build(), True),
        ),
        (
            b'{ "schema": { "type": "boolean", "optional": false, "name": "bool", "version": 2, "doc": "the'
            b' documentation", "parameters": { "foo": "bar" }}, "payload": true }',
            SchemaAndValue(
                SchemaBuilder.bool().name("bool").version(2).doc("the documentation").parameter("foo", "bar").build(),
                True,
            ),
        ),
        # JsonConverterTest.floatToConnect / doubleToConnect / longToConnect
        (b'{ "schema": { "type": "float" }, "payload": 12.34 }', SchemaAndValue(Schema.FLOAT32_SCHEMA, 12.34)),
        (b'{ "schema": { "type": "double" }, "payload": 12.34 }', SchemaAndValue(Schema.FLOAT64_SCHEMA, 12.34)),
        (
            b'{ "schema": { "type": "int64" }, "payload": 4398046511104 }',
            SchemaAndValue(Schema.INT64_SCHEMA, 4398046511104),
        ),
        # JsonConverterTest.bytesToConnect
        (
            b'{ "schema": { "type": "bytes" }, "payload": "dGVzdC1zdHJpbmc=" }',
            SchemaAndValue(Schema.BYTES_SCHEMA, b"test-string"),
        ),
        # JsonConverterTest.mapToConnectNonStringKeys
        (
            b'{ "schema": { "type": "map", "keys": { "type" : "int32" }, "values": { "type" : "int32" } },'
            b' "payload": [ [1, 12], [2, 15] ] }',
            SchemaAndValue(SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).build(), {1: 12, 2: 15}),
        ),
        # JsonConverterTest.decimalToConnect
        (
            b'{ "schema": { "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1,'
            b' "parameters": { "scale": "2" } }, "payload": "AJw=" }',
            SchemaAndValue(Decimal.schema(2), decimal.Decimal("1.56")),
        ),
        # JsonConverterTest.decimalToConnectWithDefaultValue-style numeric payload keeps its digits
        (
            b'{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,'
            b'"parameters":{"scale":"2"}},"payload":1.5600000000000000000000000001}',
            SchemaAndValue(Decimal.schema(2), decimal.Decimal("1.5600000000000000000000000001")),
        ),
        # JsonConverterTest.dateToConnect / timeToConnect / timestampToConnect
        (
            b'{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1 },'
            b' "payload": 10000 }',
            SchemaAndValue(Date.SCHEMA, datetime.date(1997, 5, 19)),
        ),
        (
            b'{ "schema": { "type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1 },'
            b' "payload": 14400000 }',
            SchemaAndValue(Time.SCHEMA, datetime.time(4, 0)),
        ),
        (
            b'{ "schema": { "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1 },'
            b' "payload": 4000000000 }',
            SchemaAndValue(Timestamp.SCHEMA, datetime.datetime(1970, 2, 16, 7, 6, 40, tzinfo=UTC)),
        ),
        # JsonConverterTest.nullSchemaPrimitiveToConnect
        (b'{ "schema": null, "payload": null }', SchemaAndValue(None, None)),
        (b'{ "schema": null, "payload": 12 }', SchemaAndValue(None, 12)),
        (b'{ "schema": null, "payload": 12.24 }', SchemaAndValue(None, 12.24)),
        (b'{ "schema": null, "payload": [1, "2", 3] }', SchemaAndValue(None, [1, "2", 3])),
        (
            b'{ "schema": null, "payload": { "field1": 1, "field2": 2} }',
            SchemaAndValue(None, {"field1": 1, "field2": 2}),
        ),
    ],
)
def test_reads_kafka_test_messages(msg: bytes, expected: SchemaAndValue) -> None:
    assert converter().to_connect_data(TOPIC, msg) == expected


def test_tombstone_reads_as_null() -> None:
    # Newer JsonConverter.toConnectData: "This handles a tombstone message".
    assert converter().to_connect_data(TOPIC, None) == SchemaAndValue(None, None)


def test_schemas_disabled_reads_plain_json() -> None:
    # JsonConverterTest.noSchemaToConnect
    c = converter(schemas_enable=False)
    assert c.to_connect_data(TOPIC, b"true") == SchemaAndValue(None, True)
    assert c.to_connect_data(TOPIC, b'{"a":[1,2.5,null]}') == SchemaAndValue(None, {"a": [1, 2.5, None]})
    # Floats stay floats even when a string mentions the Decimal logical name.
    doc = b'{"n":"org.apache.kafka.connect.data.Decimal","x":0.1}'
    assert c.to_connect_data(TOPIC, doc).value == {"n": "org.apache.kafka.connect.data.Decimal", "x": 0.1}
    # Jackson reads empty input as a missing node.
    assert c.to_connect_data(TOPIC, b"") == SchemaAndValue(None, None)


def test_deserialize_null_to_default_and_to_null() -> None:
    # JsonConverterTest.deserializeNullToDefault / deserializeNullToNull (KIP-581)
    msg = b'{"schema":{"type":"string","optional":true,"default":"default"},"payload":null}'
    assert converter().to_connect_data(TOPIC, msg).value == "default"
    assert converter(replace_null_with_default=False).to_connect_data(TOPIC, msg).value is None


def test_utf16_input_is_detected() -> None:
    msg = '{"schema":{"type":"string","optional":false},"payload":"é"}'.encode("utf-16")
    assert converter().to_connect_data(TOPIC, msg).value == "é"


def test_header_converter_interface() -> None:
    c = JsonConverter()
    c.configure({"converter.type": "header", "schemas.enable": "false"})
    data = c.from_connect_header(TOPIC, "h", Schema.INT32_SCHEMA, 5)
    assert data == b"5"
    assert c.to_connect_header(TOPIC, "h", data) == SchemaAndValue(None, 5)


def test_schema_cache_is_bounded() -> None:
    c = converter(schemas_cache_size=2)
    for i in range(5):
        c.from_connect_data(TOPIC, SchemaBuilder.int32().version(i + 1).build(), i)
    assert len(c._writers) == 2


# -- properties -------------------------------------------------------------------------------
NAMES = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
INT_RANGES = {
    Type.INT8: (-(2**7), 2**7 - 1),
    Type.INT16: (-(2**15), 2**15 - 1),
    Type.INT32: (-(2**31), 2**31 - 1),
    Type.INT64: (-(2**63), 2**63 - 1),
}


def values_for(schema: Schema, allow_null: bool = True) -> st.SearchStrategy[Any]:
    """Values of `schema`; null only where it reads back as null (optional, no default)."""
    base = _non_null_values(schema)
    if allow_null and schema.optional and schema.default_value is None:
        return st.one_of(st.none(), base)
    return base


def _non_null_values(schema: Schema) -> st.SearchStrategy[Any]:
    name, t = schema.name, schema.type
    if name == Decimal.LOGICAL_NAME:
        scale = Decimal.scale(schema)
        return st.integers(-(10**40), 10**40).map(lambda n: decimal.Decimal(n).scaleb(-scale, decimal.Context(prec=99)))
    if name == Date.LOGICAL_NAME:
        return st.dates()
    if name == Time.LOGICAL_NAME:
        return st.integers(0, 86_399_999).map(lambda ms: Time.to_logical(schema, ms))
    if name == Timestamp.LOGICAL_NAME:
        return st.integers(-(2**45), 2**45).map(lambda ms: Timestamp.to_logical(schema, ms))
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        return st.integers(lo, hi)
    if t is Type.FLOAT64:
        return st.floats(allow_nan=False)
    if t is Type.FLOAT32:
        # Quarters below 2**18: exact in float32, and Float.toString prints them exactly.
        return st.integers(-(2**20), 2**20).map(lambda i: i / 4)
    if t is Type.BOOLEAN:
        return st.booleans()
    if t is Type.STRING:
        return SAFE_TEXT
    if t is Type.BYTES:
        return st.binary(max_size=16)
    if t is Type.ARRAY:
        assert schema.value_schema is not None
        return st.lists(values_for(schema.value_schema), max_size=4)
    if t is Type.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        return st.dictionaries(
            values_for(schema.key_schema, allow_null=False), values_for(schema.value_schema), max_size=3
        )
    return st.tuples(*(values_for(f.schema) for f in schema.fields)).map(lambda vs: _struct(schema, vs))


def _struct(schema: Schema, values: tuple[Any, ...]) -> Struct:
    s = Struct(schema)
    for f, v in zip(schema.fields, values, strict=True):
        s.put(f, v)
    return s


PRIMITIVE_TYPES = [
    Type.INT8,
    Type.INT16,
    Type.INT32,
    Type.INT64,
    Type.FLOAT32,
    Type.FLOAT64,
    Type.BOOLEAN,
    Type.STRING,
    Type.BYTES,
]
LOGICAL_BUILDERS = [
    lambda: Decimal.builder(0),
    lambda: Decimal.builder(3),
    lambda: Decimal.builder(-2),
    Date.builder,
    Time.builder,
    Timestamp.builder,
]


@st.composite
def decorate(draw: st.DrawFn, builder: SchemaBuilder, logical: bool = False) -> Schema:
    """Optional flag plus metadata; sometimes a default drawn from the schema's own values."""
    if draw(st.booleans()):
        builder.optional()
    if not logical and draw(st.booleans()):
        builder.name(draw(NAMES))
    if draw(st.integers(0, 3)) == 0:
        if not logical:
            builder.version(draw(st.integers(0, 1000)))
        builder.doc(draw(SAFE_TEXT))
        builder.parameter("p." + draw(NAMES), draw(SAFE_TEXT))  # never clobbers a Decimal scale
    schema = builder.build()
    if schema.type is not Type.STRUCT and draw(st.integers(0, 4)) == 0:
        builder.default_value(draw(values_for(schema, allow_null=False)))
        schema = builder.build()
    return schema


primitive_schemas = st.one_of(
    st.sampled_from(PRIMITIVE_TYPES).flatmap(lambda t: decorate(SchemaBuilder(t))),
    st.sampled_from(LOGICAL_BUILDERS).flatmap(lambda make: decorate(make(), logical=True)),
)


def _extend(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
    arrays = children.flatmap(lambda c: decorate(SchemaBuilder.array(c)))
    maps = st.tuples(primitive_schemas, children).flatmap(lambda kv: decorate(SchemaBuilder.map(*kv)))
    structs = st.lists(st.tuples(NAMES, children), max_size=5, unique_by=lambda nf: nf[0]).flatmap(
        lambda fields: decorate(_struct_builder(fields))
    )
    return st.one_of(arrays, maps, structs)


def _struct_builder(fields: list[tuple[str, Schema]]) -> SchemaBuilder:
    b = SchemaBuilder.struct()
    for name, schema in fields:
        b.field(name, schema)
    return b


schemas = st.recursive(primitive_schemas, _extend, max_leaves=12)
schema_and_value = schemas.flatmap(lambda s: st.tuples(st.just(s), values_for(s, allow_null=True)))
CONFIGS = st.fixed_dictionaries(
    {
        "decimal.format": st.sampled_from(["BASE64", "NUMERIC"]),
        "replace.null.with.default": st.booleans(),
    }
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_value, CONFIGS)
def test_property_roundtrip(sv: tuple[Schema, Any], configs: dict[str, Any]) -> None:
    schema, value = sv
    c = JsonConverter()
    c.configure(configs, False)
    data = c.from_connect_data(TOPIC, schema, value)
    assert data is not None
    json.loads(data)  # well-formed JSON (NaN is never generated)
    back = c.to_connect_data(TOPIC, data)
    assert back.schema == schema
    assert back.value == value
    # Reading the same bytes again goes through the cached-schema fast path.
    assert c.to_connect_data(TOPIC, data) == back


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_value, CONFIGS)
def test_property_generated_struct_encoder_matches_reference(sv: tuple[Schema, Any], configs: dict[str, Any]) -> None:
    schema, value = sv
    if schema.type is not Type.STRUCT or value is None:
        return
    opts = enc.EncodeOptions(
        numeric_decimals=configs["decimal.format"] == "NUMERIC",
        replace_null_with_default=configs["replace.null.with.default"],
    )
    assert enc._generate_struct(schema, opts)(value) == enc._closure_struct(schema, opts)(value)


schemaless_values = st.recursive(
    # Infinities excluded: without a schema Kafka writes them as strings and reads strings back.
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**63), 2**63 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        SAFE_TEXT,
    ),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(SAFE_TEXT, children, max_size=4)),
    max_leaves=10,
)


@settings(max_examples=examples(200), deadline=None)
@given(schemaless_values, st.booleans())
def test_property_schemaless_roundtrip(value: Any, schemas_enable: bool) -> None:
    c = converter(schemas_enable=schemas_enable)
    data = c.from_connect_data(TOPIC, None, value)
    if value is None:
        assert data is None
        return
    assert data is not None
    assert c.to_connect_data(TOPIC, data) == SchemaAndValue(None, value)


def test_schemaless_infinity_reads_back_as_its_string() -> None:
    # Jackson quotes non-finite doubles; without a schema nothing says it was a number.
    c = converter(schemas_enable=False)
    assert c.from_connect_data(TOPIC, None, float("inf")) == b'"Infinity"'
    assert c.to_connect_data(TOPIC, b'"Infinity"').value == "Infinity"
    # With a float schema the string is read back as the number.
    data = converter().from_connect_data(TOPIC, Schema.FLOAT64_SCHEMA, float("-inf"))
    assert converter().to_connect_data(TOPIC, data).value == float("-inf")


def test_interleaved_schemas_read_correctly() -> None:
    c = converter()
    a = SchemaBuilder.struct().name("a").field("x", Schema.INT32_SCHEMA).build()
    b = SchemaBuilder.struct().name("b").field("x", Schema.STRING_SCHEMA).build()
    records = [(a, Struct(a).put("x", 1)), (b, Struct(b).put("x", "one")), (a, Struct(a).put("x", 2))] * 2
    for schema, value in records:
        assert c.to_connect_data(TOPIC, c.from_connect_data(TOPIC, schema, value)) == SchemaAndValue(schema, value)


def test_very_wide_struct_uses_the_closure_encoder_with_the_same_output() -> None:
    b = SchemaBuilder.struct()
    for i in range(300):
        b.field(f"c{i}", Schema.OPTIONAL_INT32_SCHEMA if i % 2 else Schema.STRING_SCHEMA)
    schema = b.build()
    value = Struct(schema)
    for i in range(0, 300, 2):
        value.put(f"c{i}", f"v{i}")
    data = converter(schemas_enable=False).from_connect_data(TOPIC, schema, value)
    assert data is not None
    assert json.loads(data) == {f"c{i}": (f"v{i}" if i % 2 == 0 else None) for i in range(300)}
    opts = enc.EncodeOptions()
    assert enc._generate_struct(schema, opts)(value) == enc._closure_struct(schema, opts)(value)
    assert converter().to_connect_data(TOPIC, converter().from_connect_data(TOPIC, schema, value)).value == value
