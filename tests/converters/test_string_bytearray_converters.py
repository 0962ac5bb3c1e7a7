"""StringConverter and ByteArrayConverter (cases from Kafka's StringConverterTest/ByteArrayConverterTest)."""

from __future__ import annotations

import datetime
import decimal

import pytest

from cdc.api.data import Schema, SchemaAndValue, SchemaBuilder, Struct
from cdc.api.errors import ConfigException, DataException
from cdc.converters import ByteArrayConverter, StringConverter

TOPIC = "topic"
SAMPLE = "a string"


def string_converter(**configs: str) -> StringConverter:
    c = StringConverter()
    c.configure({k.replace("_", "."): v for k, v in configs.items()}, True)
    return c


def test_string_to_bytes() -> None:
    # StringConverterTest.testStringToBytes / testNullToBytes / testToBytesIgnoresSchema
    c = string_converter()
    assert c.from_connect_data(TOPIC, Schema.STRING_SCHEMA, SAMPLE) == SAMPLE.encode()
    assert c.from_connect_data(TOPIC, Schema.OPTIONAL_STRING_SCHEMA, None) is None
    assert c.from_connect_data(TOPIC, Schema.BOOLEAN_SCHEMA, True) == b"true"


@pytest.mark.parametrize(
    ("schema", "value", "text"),
    [  # Java's toString() of the same values
        (None, True, "true"),
        (None, 12, "12"),
        (Schema.FLOAT64_SCHEMA, 1e10, "1.0E10"),
        (Schema.FLOAT32_SCHEMA, 0.1, "0.1"),
        (None, decimal.Decimal("1E+3"), "1E+3"),
        (None, [1, "a", None], "[1, a, null]"),
        (None, {"k": 1, "j": False}, "{k=1, j=false}"),
        (None, datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC), "Thu Jan 01 00:00:00 UTC 1970"),
    ],
)
def test_non_strings_use_java_to_string(schema: Schema | None, value: object, text: str) -> None:
    assert string_converter().from_connect_data(TOPIC, schema, value) == text.encode()


def test_struct_uses_kafkas_struct_to_string() -> None:
    schema = SchemaBuilder.struct().field("a", Schema.INT32_SCHEMA).field("b", Schema.OPTIONAL_STRING_SCHEMA).build()
    assert string_converter().from_connect_data(TOPIC, schema, Struct(schema).put("a", 1)) == b"Struct{a=1}"


def test_bytes_to_string() -> None:
    # StringConverterTest.testBytesToString / testBytesNullToString
    c = string_converter()
    assert c.to_connect_data(TOPIC, SAMPLE.encode()) == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, SAMPLE)
    assert c.to_connect_data(TOPIC, None) == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, None)
    # new String(bytes, UTF_8) substitutes U+FFFD for malformed input.
    assert c.to_connect_data(TOPIC, b"a\xffb").value == "a\ufffdb"


def test_non_utf8_encoding_like_java() -> None:
    # StringConverterTest.testToBytesNonUtf8Encoding / testBytesToStringNonUtf8Encoding:
    # Java's UTF-16 is big-endian with a byte-order mark.
    c = string_converter(converter_encoding="UTF-16")
    data = c.from_connect_data(TOPIC, Schema.STRING_SCHEMA, SAMPLE)
    assert data == b"\xfe\xff" + SAMPLE.encode("utf-16-be")
    assert c.to_connect_data(TOPIC, data).value == SAMPLE
    latin = string_converter(converter_encoding="ISO-8859-1")
    assert latin.from_connect_data(TOPIC, None, "é☃") == b"\xe9?"  # unmappable becomes '?'


def test_prefixed_serializer_encoding_wins() -> None:
    c = StringConverter()
    c.configure({"converter.encoding": "UTF-8", "key.serializer.encoding": "UTF-16BE"}, True)
    assert c.from_connect_data(TOPIC, None, "a") == b"\x00a"


def test_unknown_encoding_is_a_config_error() -> None:
    with pytest.raises(ConfigException, match="Unsupported encoding"):
        string_converter(converter_encoding="no-such-charset")


def test_string_converter_as_header_converter() -> None:
    # StringConverterTest.testStringHeaderValueToBytes / testNonStringHeaderValueToBytes
    c = StringConverter()
    c.configure({"converter.type": "header"})
    assert c.from_connect_header(TOPIC, "h", Schema.STRING_SCHEMA, SAMPLE) == SAMPLE.encode()
    assert c.from_connect_header(TOPIC, "h", Schema.BOOLEAN_SCHEMA, True) == b"true"
    assert c.to_connect_header(TOPIC, "h", b"x") == SchemaAndValue(Schema.OPTIONAL_STRING_SCHEMA, "x")


def test_bytearray_passthrough() -> None:
    # ByteArrayConverterTest.testFromConnect / testFromConnectSchemaless / testToConnect / *Null
    c = ByteArrayConverter()
    c.configure({}, False)
    assert c.from_connect_data(TOPIC, Schema.BYTES_SCHEMA, b"abc") == b"abc"
    assert c.from_connect_data(TOPIC, None, bytearray(b"abc")) == b"abc"
    assert c.from_connect_data(TOPIC, Schema.OPTIONAL_BYTES_SCHEMA, None) is None
    assert c.to_connect_data(TOPIC, b"abc") == SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, b"abc")
    assert c.to_connect_data(TOPIC, None) == SchemaAndValue(Schema.OPTIONAL_BYTES_SCHEMA, None)
    assert c.from_connect_header(TOPIC, "h", None, memoryview(b"xy")) == b"xy"


def test_bytearray_rejects_other_schemas_and_values() -> None:
    # ByteArrayConverterTest.testFromConnectBadSchema / testFromConnectInvalidValue
    c = ByteArrayConverter()
    with pytest.raises(DataException, match="Invalid schema type for ByteArrayConverter: INT32"):
        c.from_connect_data(TOPIC, Schema.INT32_SCHEMA, 12)
    with pytest.raises(DataException, match="not compatible with objects of type"):
        c.from_connect_data(TOPIC, Schema.BYTES_SCHEMA, 12)
