"""Byte-exact JsonConverter output, checked against Kafka's own tests and documentation.

Kafka's JsonConverterTest mostly compares parsed JSON trees, so each expected string
below is the tree from the cited test laid out the way Jackson serializes Kafka's
ObjectNodes: compact, keys in insertion order (`type`, `items`/`keys`,`values`/`fields`,
`optional`, `name`, `version`, `doc`, `parameters`, `default`; a struct field's `field`
last), envelope `schema` before `payload`, UTF-8 without escaping non-ASCII.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest

from cdc.api.data import Date, Decimal, Schema, SchemaBuilder, Struct, Time, Timestamp
from cdc.converters import JsonConverter

TOPIC = "topic"
D = decimal.Decimal


def converter(**configs: Any) -> JsonConverter:
    c = JsonConverter()
    c.configure({k.replace("_", "."): v for k, v in configs.items()}, False)
    return c


def write(schema: Schema | None, value: Any, **configs: Any) -> bytes | None:
    return converter(**configs).from_connect_data(TOPIC, schema, value)


FOUR_FIELDS = (
    SchemaBuilder.struct()
    .field("field1", Schema.BOOLEAN_SCHEMA)
    .field("field2", Schema.STRING_SCHEMA)
    .field("field3", Schema.STRING_SCHEMA)
    .field("field4", Schema.BOOLEAN_SCHEMA)
    .build()
)

GOLDEN: list[tuple[str, Schema | None, Any, dict[str, Any], str]] = [
    # JsonConverterTest.booleanToJson
    ("boolean", Schema.BOOLEAN_SCHEMA, True, {}, '{"schema":{"type":"boolean","optional":false},"payload":true}'),
    # JsonConverterTest.testJsonSchemaMetadataTranslation (optional, null payload)
    (
        "optional-null",
        Schema.OPTIONAL_BOOLEAN_SCHEMA,
        None,
        {},
        '{"schema":{"type":"boolean","optional":true},"payload":null}',
    ),
    # JsonConverterTest.testJsonSchemaMetadataTranslation (default)
    (
        "default",
        SchemaBuilder.bool().default_value(True).build(),
        True,
        {},
        '{"schema":{"type":"boolean","optional":false,"default":true},"payload":true}',
    ),
    # JsonConverterTest.testJsonSchemaMetadataTranslation (name, version, doc, parameters)
    (
        "metadata",
        SchemaBuilder.bool()
        .required()
        .name("bool")
        .version(3)
        .doc("the documentation")
        .parameter("foo", "bar")
        .build(),
        True,
        {},
        '{"schema":{"type":"boolean","optional":false,"name":"bool","version":3,"doc":"the documentation",'
        '"parameters":{"foo":"bar"}},"payload":true}',
    ),
    # JsonConverterTest.byteToJson / shortToJson / intToJson
    ("int8", Schema.INT8_SCHEMA, 12, {}, '{"schema":{"type":"int8","optional":false},"payload":12}'),
    ("int16", Schema.INT16_SCHEMA, 12, {}, '{"schema":{"type":"int16","optional":false},"payload":12}'),
    ("int32", Schema.INT32_SCHEMA, 12, {}, '{"schema":{"type":"int32","optional":false},"payload":12}'),
    # JsonConverterTest.longToJson
    (
        "int64",
        Schema.INT64_SCHEMA,
        4398046511104,
        {},
        '{"schema":{"type":"int64","optional":false},"payload":4398046511104}',
    ),
    # JsonConverterTest.floatToJson (12.34f; Float.toString gives "12.34")
    ("float32", Schema.FLOAT32_SCHEMA, 12.34, {}, '{"schema":{"type":"float","optional":false},"payload":12.34}'),
    # JsonConverterTest.doubleToJson
    ("float64", Schema.FLOAT64_SCHEMA, 12.34, {}, '{"schema":{"type":"double","optional":false},"payload":12.34}'),
    # Double.toString javadoc: "1.0" keeps a fractional digit; >= 10^7 and < 10^-3 switch to "E" notation.
    ("double-1.0", Schema.FLOAT64_SCHEMA, 1.0, {}, '{"schema":{"type":"double","optional":false},"payload":1.0}'),
    ("double-1E10", Schema.FLOAT64_SCHEMA, 1e10, {}, '{"schema":{"type":"double","optional":false},"payload":1.0E10}'),
    ("double-1E-5", Schema.FLOAT64_SCHEMA, 1e-5, {}, '{"schema":{"type":"double","optional":false},"payload":1.0E-5}'),
    (
        "double-max",
        Schema.FLOAT64_SCHEMA,
        1.7976931348623157e308,
        {},
        '{"schema":{"type":"double","optional":false},"payload":1.7976931348623157E308}',
    ),
    # Float.toString javadoc: Float.MIN_VALUE is 1.4E-45; 1.0E7f is "1.0E7".
    (
        "float-min",
        Schema.FLOAT32_SCHEMA,
        1.401298464324817e-45,
        {},
        '{"schema":{"type":"float","optional":false},"payload":1.4E-45}',
    ),
    ("float-1E7", Schema.FLOAT32_SCHEMA, 1e7, {}, '{"schema":{"type":"float","optional":false},"payload":1.0E7}'),
    # Jackson's default WRITE_NAN_AS_STRINGS writes String.valueOf(double) in quotes.
    (
        "double-nan",
        Schema.FLOAT64_SCHEMA,
        float("nan"),
        {},
        '{"schema":{"type":"double","optional":false},"payload":"NaN"}',
    ),
    (
        "double-neg-inf",
        Schema.FLOAT64_SCHEMA,
        float("-inf"),
        {},
        '{"schema":{"type":"double","optional":false},"payload":"-Infinity"}',
    ),
    # JsonConverterTest.bytesToJson ("test-string"; base64 text from bytesToConnect)
    (
        "bytes",
        Schema.BYTES_SCHEMA,
        b"test-string",
        {},
        '{"schema":{"type":"bytes","optional":false},"payload":"dGVzdC1zdHJpbmc="}',
    ),
    # JsonConverterTest.stringToJson
    (
        "string",
        Schema.STRING_SCHEMA,
        "test-string",
        {},
        '{"schema":{"type":"string","optional":false},"payload":"test-string"}',
    ),
    # Jackson writes UTF-8 unescaped and escapes control characters with upper-case hex.
    (
        "string-unicode",
        Schema.STRING_SCHEMA,
        'héllo ☃ 😀 "q" \\ \n\t\x1f',
        {},
        '{"schema":{"type":"string","optional":false},"payload":"héllo ☃ 😀 \\"q\\" \\\\ \\n\\t\\u001F"}',
    ),
    # JsonConverterTest.arrayToJson
    (
        "array",
        SchemaBuilder.array(Schema.INT32_SCHEMA).build(),
        [1, 2, 3],
        {},
        '{"schema":{"type":"array","items":{"type":"int32","optional":false},"optional":false},"payload":[1,2,3]}',
    ),
    # JsonConverterTest.mapToJsonStringKeys
    (
        "map-string-keys",
        SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(),
        {"key1": 12, "key2": 15},
        {},
        '{"schema":{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},'
        '"optional":false},"payload":{"key1":12,"key2":15}}',
    ),
    # JsonConverterTest.mapToJsonNonStringKeys
    (
        "map-int-keys",
        SchemaBuilder.map(Schema.INT32_SCHEMA, Schema.INT32_SCHEMA).build(),
        {1: 12, 2: 15},
        {},
        '{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},'
        '"optional":false},"payload":[[1,12],[2,15]]}',
    ),
    # JsonConverterTest.structToJson
    (
        "struct",
        FOUR_FIELDS,
        Struct(FOUR_FIELDS).put("field1", True).put("field2", "string2").put("field3", "string3").put("field4", False),
        {},
        '{"schema":{"type":"struct","fields":[{"type":"boolean","optional":false,"field":"field1"},'
        '{"type":"string","optional":false,"field":"field2"},{"type":"string","optional":false,"field":"field3"},'
        '{"type":"boolean","optional":false,"field":"field4"}],"optional":false},'
        '"payload":{"field1":true,"field2":"string2","field3":"string3","field4":false}}',
    ),
    # JsonConverterTest.decimalToJson (payload is base64 of {0, -100}, the unscaled 156)
    (
        "decimal-base64",
        Decimal.schema(2),
        D("1.56"),
        {},
        '{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
        '"parameters":{"scale":"2"}},"payload":"AJw="}',
    ),
    # JsonConverterTest.decimalToNumericJson
    (
        "decimal-numeric",
        Decimal.schema(2),
        D("1.56"),
        {"decimal_format": "NUMERIC"},
        '{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
        '"parameters":{"scale":"2"}},"payload":1.56}',
    ),
    # BigDecimal.toString javadoc table: unscaled 123 at scale 10 is "1.23E-8", at scale -1 "1.23E+3".
    (
        "decimal-numeric-sci",
        Decimal.schema(10),
        D("1.23E-8"),
        {"decimal_format": "NUMERIC", "schemas_enable": False},
        "1.23E-8",
    ),
    (
        "decimal-numeric-neg-scale",
        Decimal.schema(-1),
        D("-1.23E+3"),
        {"decimal_format": "numeric", "schemas_enable": False},
        "-1.23E+3",
    ),
    # Decimal.fromLogical: minimal two's complement, here 0xFF63 for -157 (scale 0).
    ("decimal-negative", Decimal.schema(0), D("-157"), {"schemas_enable": False}, '"/2M="'),
    # JsonConverterTest.dateToJson (10000 days after the epoch)
    (
        "date",
        Date.SCHEMA,
        datetime.date(1970, 1, 1) + datetime.timedelta(days=10000),
        {},
        '{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1},'
        '"payload":10000}',
    ),
    # JsonConverterTest.timeToJson (14400000 ms after midnight)
    (
        "time",
        Time.SCHEMA,
        datetime.time(4, 0),
        {},
        '{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1},'
        '"payload":14400000}',
    ),
    # JsonConverterTest.timestampToJson (4000000000 ms after the epoch)
    (
        "timestamp",
        Timestamp.SCHEMA,
        datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(milliseconds=4_000_000_000),
        {},
        '{"schema":{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1},'
        '"payload":4000000000}',
    ),
    # JsonConverterTest.nullSchemaAndPrimitiveToJson
    ("schemaless-boolean", None, True, {}, '{"schema":null,"payload":true}'),
    # JsonConverterTest.nullSchemaAndArrayToJson
    ("schemaless-array", None, [1, "string", True], {}, '{"schema":null,"payload":[1,"string",true]}'),
    # JsonConverterTest.nullSchemaAndMapToJson
    (
        "schemaless-map",
        None,
        {"key1": 12, "key2": "string", "key3": True},
        {},
        '{"schema":null,"payload":{"key1":12,"key2":"string","key3":true}}',
    ),
    # JsonConverterTest.nullSchemaAndMapNonStringKeysToJson (Kafka's HashMap order is
    # unspecified; a Python dict keeps insertion order)
    (
        "schemaless-map-non-string-keys",
        None,
        {"string": 12, 52: "string", False: True},
        {},
        '{"schema":null,"payload":[["string",12],[52,"string"],[false,true]]}',
    ),
    # JsonConverterTest.noSchemaToJson
    ("schemas-disabled", None, True, {"schemas_enable": False}, "true"),
    (
        "schemas-disabled-struct",
        FOUR_FIELDS,
        Struct(FOUR_FIELDS).put("field1", True).put("field2", "a").put("field3", "b").put("field4", False),
        {"schemas_enable": "false"},
        '{"field1":true,"field2":"a","field3":"b","field4":false}',
    ),
    # JsonConverterTest.serializeNullToDefault (KIP-581)
    (
        "null-to-default",
        SchemaBuilder.string().optional().default_value("default").build(),
        None,
        {},
        '{"schema":{"type":"string","optional":true,"default":"default"},"payload":"default"}',
    ),
    # JsonConverterTest.serializeNullToNull (KIP-581, replace.null.with.default=false)
    (
        "null-to-null",
        SchemaBuilder.string().optional().default_value("default").build(),
        None,
        {"replace_null_with_default": False},
        '{"schema":{"type":"string","optional":true,"default":"default"},"payload":null}',
    ),
]

_FIELD_DEFAULT = (
    SchemaBuilder.struct().field("field1", SchemaBuilder.string().optional().default_value("default").build()).build()
)
_NESTED_INNER = SchemaBuilder.struct().name("Inner").optional().field("x", Schema.FLOAT64_SCHEMA).build()
_NESTED = (
    SchemaBuilder.struct()
    .name("Outer")
    .version(2)
    .doc("nested")
    .field("inner", _NESTED_INNER)
    .field("tags", SchemaBuilder.array(Schema.OPTIONAL_STRING_SCHEMA).optional().build())
    .field("missing", Schema.OPTIONAL_INT64_SCHEMA)
    .build()
)
# Debezium tutorial, "Viewing a create event": the message key of inventory.customers as
# kafka-console-consumer prints it.
_DBZ_KEY = SchemaBuilder.struct().name("dbserver1.inventory.customers.Key").field("id", Schema.INT32_SCHEMA).build()

GOLDEN += [
    # JsonConverterTest.serializeFieldNullToDefault (KIP-581)
    (
        "field-null-to-default",
        _FIELD_DEFAULT,
        Struct(_FIELD_DEFAULT),
        {},
        '{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"default":"default","field":"field1"}],'
        '"optional":false},"payload":{"field1":"default"}}',
    ),
    # JsonConverterTest.serializeFieldNullToNull (KIP-581)
    (
        "field-null-to-null",
        _FIELD_DEFAULT,
        Struct(_FIELD_DEFAULT),
        {"replace_null_with_default": False},
        '{"schema":{"type":"struct","fields":[{"type":"string","optional":true,"default":"default","field":"field1"}],'
        '"optional":false},"payload":{"field1":null}}',
    ),
    # Nested struct with name/version/doc, optional array of optional strings, null field.
    (
        "nested-struct",
        _NESTED,
        Struct(_NESTED).put("inner", Struct(_NESTED_INNER).put("x", 0.5)).put("tags", ["a", None]),
        {},
        '{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"double","optional":false,'
        '"field":"x"}],"optional":true,"name":"Inner","field":"inner"},{"type":"array","items":{"type":"string",'
        '"optional":true},"optional":true,"field":"tags"},{"type":"int64","optional":true,"field":"missing"}],'
        '"optional":false,"name":"Outer","version":2,"doc":"nested"},'
        '"payload":{"inner":{"x":0.5},"tags":["a",null],"missing":null}}',
    ),
    (
        "debezium-key",
        _DBZ_KEY,
        Struct(_DBZ_KEY).put("id", 1004),
        {},
        '{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,'
        '"name":"dbserver1.inventory.customers.Key"},"payload":{"id":1004}}',
    ),
]


@pytest.mark.parametrize(
    ("schema", "value", "configs", "expected"), [g[1:] for g in GOLDEN], ids=[g[0] for g in GOLDEN]
)
def test_golden_bytes(schema: Schema | None, value: Any, configs: dict[str, Any], expected: str) -> None:
    assert write(schema, value, **configs) == expected.encode("utf-8")


@pytest.mark.parametrize(
    ("schema", "value", "configs", "expected"), [g[1:] for g in GOLDEN], ids=[g[0] for g in GOLDEN]
)
def test_golden_bytes_are_stable_across_calls(
    schema: Schema | None, value: Any, configs: dict[str, Any], expected: str
) -> None:
    # The second call is served from the schema cache; it must not change a byte.
    c = converter(**configs)
    assert c.from_connect_data(TOPIC, schema, value) == c.from_connect_data(TOPIC, schema, value)


def test_null_schema_and_null_value_is_a_tombstone() -> None:
    # JsonConverter.fromConnectData: schema == null && value == null -> null bytes.
    assert write(None, None) is None
    assert write(None, None, schemas_enable=False) is None


def test_null_value_with_schemas_disabled_is_json_null() -> None:
    assert write(Schema.OPTIONAL_STRING_SCHEMA, None, schemas_enable=False) == b"null"


def test_as_json_schema_matches_the_envelope() -> None:
    c = converter()
    assert c.as_json_schema(Schema.OPTIONAL_INT32_SCHEMA) == '{"type":"int32","optional":true}'
    assert c.as_json_schema(None) == "null"
