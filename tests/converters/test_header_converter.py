"""SimpleHeaderConverter and Kafka's Values (cases from Kafka's ValuesTest/SimpleHeaderConverterTest)."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest

from cdc.api.data import Date, Decimal, Schema, SchemaAndValue, SchemaBuilder, Struct, Time, Timestamp, Type
from cdc.converters import SimpleHeaderConverter
from cdc.converters._values import _escape, _Parser, convert_to_string, parse_string

TOPIC = "topic"
UTC = datetime.UTC


def roundtrip(schema: Schema | None, value: Any) -> SchemaAndValue:
    c = SimpleHeaderConverter()
    c.configure({})
    return c.to_connect_header(TOPIC, "h", c.from_connect_header(TOPIC, "h", schema, value))


def tokens(text: str) -> list[str]:
    p = _Parser(text)
    out = []
    while p.has_next():
        out.append(p.next())
    return out


def test_escape() -> None:
    # ValuesTest.shouldEscapeStringsWithEmbeddedQuotesAndBackslashes
    assert _escape('three"blind\\"mice') == 'three\\"blind\\\\\\"mice'


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # ValuesTest.shouldParseStringsWithSingleDelimiter / WithMultipleDelimiters / WithEscapedDelimiters
        ("a{b", ["a", "{", "b"]),
        ("a:b", ["a", ":", "b"]),
        ('"b', ['"', "b"]),
        (",", [","]),
        ('"simple" string', ['"', "simple", '"', " string"]),
        ("a { b c } d", ["a ", "{", " b c ", "}", " d"]),
        ("si\\{mple", ["si\\{mple"]),
        ("si\\:mple", ["si\\:mple"]),
    ],
)
def test_tokenizer(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("true", Schema.BOOLEAN_SCHEMA, True),
        ("false", Schema.BOOLEAN_SCHEMA, False),
        ("", Schema.STRING_SCHEMA, ""),
        ("  ", Schema.STRING_SCHEMA, "  "),
        ("simple string", Schema.STRING_SCHEMA, "simple string"),
        ("'simple' string", Schema.STRING_SCHEMA, "'simple' string"),
        ("true}", Schema.STRING_SCHEMA, "true}"),  # a literal only counts when alone
        ("12", Schema.INT8_SCHEMA, 12),
        ("-4321", Schema.INT16_SCHEMA, -4321),
        ("1234567890", Schema.INT32_SCHEMA, 1234567890),
        ("5000000000", Schema.INT64_SCHEMA, 5000000000),
        ("1.0", Schema.INT8_SCHEMA, 1),  # an integral decimal is an integer
        ("12.34", Schema.FLOAT32_SCHEMA, 12.34),
        ("1.5e300", Schema.FLOAT64_SCHEMA, 1.5e300),
        ("123456789012345678901234", Decimal.schema(0), decimal.Decimal("123456789012345678901234")),
        ("2024-01-15", Date.SCHEMA, datetime.date(2024, 1, 15)),
        ("12:34:56.789Z", Time.SCHEMA, datetime.time(12, 34, 56, 789000)),
        ("2024-01-15T12:34:56.789Z", Timestamp.SCHEMA, datetime.datetime(2024, 1, 15, 12, 34, 56, 789000, tzinfo=UTC)),
        ("[1, 2, 3,,,]", Schema.STRING_SCHEMA, "[1, 2, 3,,,]"),  # ValuesTest.shouldParseStringListWithExtraDelimiters…
        ("{6:9 4:20}", Schema.STRING_SCHEMA, "{6:9 4:20}"),
        ("12,34", Schema.INT8_SCHEMA, 12),  # Kafka reads only the first token here
        (".5", Schema.STRING_SCHEMA, ".5"),
    ],
)
def test_parse_scalars(text: str, schema: Schema, value: Any) -> None:
    assert parse_string(text) == SchemaAndValue(schema, value)


def test_parse_null() -> None:
    assert parse_string("null") == SchemaAndValue(None, None)
    assert parse_string(None) == SchemaAndValue(None, None)


def test_parse_maps() -> None:
    # ValuesTest.shouldParseStringOfMapWithStringValuesWithWhitespaceAsMap / ...ShortValues...
    assert parse_string('{ "foo" : "123", \n"bar" : "baz" } ') == SchemaAndValue(
        SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build(), {"foo": "123", "bar": "baz"}
    )
    assert parse_string(' { "foo" :  12345 , "bar" : 0,  "baz" : -4321 }  ') == SchemaAndValue(
        SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT16_SCHEMA).build(), {"foo": 12345, "bar": 0, "baz": -4321}
    )


def test_parse_lists() -> None:
    # ValuesTest.shouldConvertStringOfListWithOnlyNumericElementTypesIntoListOfLargestNumericType
    parsed = parse_string("[1, 2, 32768]")
    assert parsed == SchemaAndValue(SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1, 2, 32768])
    # Mixed element types: no common element schema.
    mixed = parse_string('[1, 2, 3, "four"]')
    assert mixed.schema is not None and mixed.schema.type is Type.ARRAY and mixed.schema.value_schema is None
    assert mixed.value == [1, 2, 3, "four"]
    # Ints widen to the float type of another element.
    assert parse_string("[1.5, 2]").value == [1.5, 2.0]
    # Quoted temporal literals become temporal values.
    assert parse_string('["2024-01-01"]').value == [datetime.date(2024, 1, 1)]


@pytest.mark.parametrize(
    ("schema", "value", "text"),
    [
        (Schema.STRING_SCHEMA, "simple", "simple"),
        (Schema.STRING_SCHEMA, 'three"blind\\"mice', 'three"blind\\"mice'),
        (Schema.BOOLEAN_SCHEMA, True, "true"),
        (Schema.INT64_SCHEMA, 5, "5"),
        (Schema.FLOAT64_SCHEMA, 1e10, "1.0E10"),
        (Schema.FLOAT32_SCHEMA, 0.1, "0.1"),
        (Schema.BYTES_SCHEMA, b"\x00\x01", "AAE="),
        (SchemaBuilder.array(Schema.STRING_SCHEMA).build(), ["foo", 'b"r'], '["foo","b\\"r"]'),
        (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT32_SCHEMA).build(), {"a": 1, "b": 2}, '{"a":1,"b":2}'),
        (Date.SCHEMA, datetime.date(2024, 1, 15), "2024-01-15"),
        (Time.SCHEMA, datetime.time(12, 34, 56, 789000), "12:34:56.789Z"),
        (Timestamp.SCHEMA, datetime.datetime(2024, 1, 15, 1, 2, 3, 4000, tzinfo=UTC), "2024-01-15T01:02:03.004Z"),
        # Kafka picks the pattern from the millis: a midnight timestamp prints as a date,
        # and anything before 1970-01-02 as a time of day.
        (Timestamp.SCHEMA, datetime.datetime(2024, 1, 15, tzinfo=UTC), "2024-01-15"),
        (Date.SCHEMA, datetime.date(1969, 7, 20), "00:00:00.000Z"),
    ],
)
def test_convert_to_string(schema: Schema, value: Any, text: str) -> None:
    assert convert_to_string(schema, value) == text


def test_struct_to_string() -> None:
    schema = SchemaBuilder.struct().field("a", Schema.INT8_SCHEMA).field("b", Schema.OPTIONAL_STRING_SCHEMA).build()
    assert convert_to_string(schema, Struct(schema).put("a", 1).put("b", "x")) == '{"a":1,"b":"x"}'


@pytest.mark.parametrize(
    ("schema", "value"),
    [  # SimpleHeaderConverterTest: values that come back with the same schema and value
        (Schema.BOOLEAN_SCHEMA, True),
        (Schema.INT8_SCHEMA, -12),
        (Schema.INT16_SCHEMA, 12345),
        (Schema.INT32_SCHEMA, 1234567890),
        (Schema.INT64_SCHEMA, -(2**62)),
        (Schema.STRING_SCHEMA, "a simple string"),
        (Schema.STRING_SCHEMA, 'three"blind\\"mice'),
        (Schema.STRING_SCHEMA, "string with delimiters: <>?,./\\=+-!@#$%^&*(){}[]|;':"),
        (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.STRING_SCHEMA).build(), {"foo": "123", "bar": "baz"}),
        (SchemaBuilder.map(Schema.STRING_SCHEMA, Schema.INT16_SCHEMA).build(), {"foo": 12345, "bar": 0}),
        (SchemaBuilder.array(Schema.STRING_SCHEMA).build(), ["foo", "bar"]),
        (SchemaBuilder.array(Schema.INT32_SCHEMA).build(), [1234567890, -987654321]),
        (Date.SCHEMA, datetime.date(2024, 1, 15)),
        (Time.SCHEMA, datetime.time(23, 59, 59, 999000)),
        (Timestamp.SCHEMA, datetime.datetime(2024, 1, 15, 12, 0, 0, 1000, tzinfo=UTC)),
        (Decimal.schema(0), decimal.Decimal("123456789012345678901234567890")),
    ],
)
def test_header_roundtrip(schema: Schema, value: Any) -> None:
    assert roundtrip(schema, value) == SchemaAndValue(schema, value)


def test_header_null_and_text_that_looks_like_a_number() -> None:
    assert roundtrip(Schema.OPTIONAL_STRING_SCHEMA, None) == SchemaAndValue(None, None)
    # No schema travels with a header: "42" written as a string reads back as an int.
    assert roundtrip(Schema.STRING_SCHEMA, "42") == SchemaAndValue(Schema.INT8_SCHEMA, 42)


def test_header_strings_are_written_raw_utf8() -> None:
    c = SimpleHeaderConverter()
    assert c.from_connect_header(TOPIC, "h", Schema.STRING_SCHEMA, "héllo") == "héllo".encode()
    assert c.from_connect_header(TOPIC, "h", None, None) is None
    assert c.to_connect_header(TOPIC, "h", None) == SchemaAndValue(None, None)
