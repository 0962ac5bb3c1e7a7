"""TimestampConverter$Key / $Value, as Kafka's TimestampConverterTest asserts it.

Kafka's java.util.Date values are Python's Connect logical values here: a Timestamp is a UTC
datetime, a Date a date and a Time a time.
"""

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import ConfigException, DataException, Date, Schema, SchemaBuilder, SourceRecord, Struct, Time, Timestamp
from cdc.transforms.timestamp_converter import (
    OPTIONAL_DATE_SCHEMA,
    OPTIONAL_TIME_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
    TimestampConverterKey,
    TimestampConverterValue,
)

UTC = datetime.UTC
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
TIME = datetime.time(0, 0, 1, 234000)  # 1234 ms after midnight
DATE = datetime.date(1970, 1, 2)
DATE_PLUS_TIME = datetime.datetime(1970, 1, 2, 0, 0, 1, 234000, tzinfo=UTC)
DATE_PLUS_TIME_UNIX = 86_401_234
DATE_PLUS_TIME_UNIX_MICROS = DATE_PLUS_TIME_UNIX * 1000 + 123
DATE_PLUS_TIME_UNIX_NANOS = DATE_PLUS_TIME_UNIX_MICROS * 1000 + 456
DATE_PLUS_TIME_UNIX_SECONDS = 86_401
STRING_DATE_FMT = "yyyy MM dd HH mm ss SSS z"
DATE_PLUS_TIME_STRING = "1970 01 02 00 00 01 234 UTC"


def value_xform(**configs: object) -> TimestampConverterValue[SourceRecord]:
    t: TimestampConverterValue[SourceRecord] = TimestampConverterValue()
    t.configure({k.replace("_", "."): v for k, v in configs.items()})
    return t


def record(schema: Schema | None, value: object) -> SourceRecord:
    return SourceRecord(None, None, "topic", 0, None, None, schema, value)


def convert(value: object, schema: Schema | None = None, **configs: object) -> SourceRecord:
    out = value_xform(**configs).apply(record(schema, value))
    assert out is not None
    return out


# -- configuration ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("configs", "key"),
    [
        ({}, "target.type"),
        ({"target.type": "invalid"}, "target.type"),
        ({"target.type": "unix", "unix.precision": "invalid"}, "unix.precision"),
        ({"target.type": "string"}, "format"),
        ({"target.type": "string", "format": "bad-format"}, "format"),
    ],
)
def test_bad_config_names_the_key(configs: dict[str, str], key: str) -> None:
    t: TimestampConverterValue[SourceRecord] = TimestampConverterValue()
    with pytest.raises(ConfigException) as info:
        t.configure(configs)
    assert key in str(info.value) and "\n" not in str(info.value)


def test_valid_unix_precision() -> None:
    value_xform(target_type="unix", unix_precision="seconds")


# -- schemaless: Timestamp to the other types -------------------------------------------------
@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("Timestamp", DATE_PLUS_TIME),
        ("Date", DATE),
        ("Time", TIME),
        ("unix", DATE_PLUS_TIME_UNIX),
    ],
)
def test_schemaless_from_timestamp(target: str, expected: object) -> None:
    out = convert(DATE_PLUS_TIME, target_type=target)
    assert out.value_schema is None and out.value == expected


def test_schemaless_timestamp_to_string() -> None:
    out = convert(DATE_PLUS_TIME, target_type="string", format=STRING_DATE_FMT)
    assert out.value_schema is None and out.value == DATE_PLUS_TIME_STRING


# -- schemaless: the other types to Timestamp -------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (DATE, datetime.datetime(1970, 1, 2, tzinfo=UTC)),
        (TIME, EPOCH + datetime.timedelta(milliseconds=1234)),
        (DATE_PLUS_TIME_UNIX, DATE_PLUS_TIME),
    ],
)
def test_schemaless_to_timestamp(value: object, expected: datetime.datetime) -> None:
    out = convert(value, target_type="Timestamp")
    assert out.value_schema is None and out.value == expected


def test_schemaless_string_to_timestamp() -> None:
    out = convert(DATE_PLUS_TIME_STRING, target_type="Timestamp", format=STRING_DATE_FMT)
    assert out.value_schema is None and out.value == DATE_PLUS_TIME


# -- with a schema ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("target", "schema", "expected"),
    [
        ("Timestamp", Timestamp.SCHEMA, DATE_PLUS_TIME),
        ("Date", Date.SCHEMA, DATE),
        ("Time", Time.SCHEMA, TIME),
        ("unix", Schema.INT64_SCHEMA, DATE_PLUS_TIME_UNIX),
    ],
)
def test_with_schema_from_timestamp(target: str, schema: Schema, expected: object) -> None:
    out = convert(DATE_PLUS_TIME, Timestamp.SCHEMA, target_type=target)
    assert out.value_schema == schema and out.value == expected


def test_with_schema_timestamp_to_string() -> None:
    out = convert(DATE_PLUS_TIME, Timestamp.SCHEMA, target_type="string", format=STRING_DATE_FMT)
    assert out.value_schema == Schema.STRING_SCHEMA and out.value == DATE_PLUS_TIME_STRING


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        (Date.SCHEMA, DATE, datetime.datetime(1970, 1, 2, tzinfo=UTC)),
        (Time.SCHEMA, TIME, EPOCH + datetime.timedelta(milliseconds=1234)),
        (Schema.INT64_SCHEMA, DATE_PLUS_TIME_UNIX, DATE_PLUS_TIME),
    ],
)
def test_with_schema_to_timestamp(schema: Schema, value: object, expected: datetime.datetime) -> None:
    out = convert(value, schema, target_type="Timestamp")
    assert out.value_schema == Timestamp.SCHEMA and out.value == expected


def test_with_schema_string_to_timestamp() -> None:
    out = convert(DATE_PLUS_TIME_STRING, Schema.STRING_SCHEMA, target_type="Timestamp", format=STRING_DATE_FMT)
    assert out.value_schema == Timestamp.SCHEMA and out.value == DATE_PLUS_TIME


# -- nulls --------------------------------------------------------------------------------------
TARGETS = ["string", "Date", "Timestamp", "unix", "Time"]


@pytest.mark.parametrize("target", TARGETS)
def test_schemaless_null_value_and_field(target: str) -> None:
    out = convert(None, target_type=target, format=STRING_DATE_FMT)
    assert out.value_schema is None and out.value is None
    out = convert(None, target_type=target, format=STRING_DATE_FMT, field="ts")
    assert out.value_schema is None and out.value is None


ORIGINALS = [
    Schema.OPTIONAL_INT64_SCHEMA,
    OPTIONAL_TIME_SCHEMA,
    OPTIONAL_DATE_SCHEMA,
    Schema.OPTIONAL_STRING_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
]
EXPECTED = {
    "Timestamp": OPTIONAL_TIMESTAMP_SCHEMA,
    "Time": OPTIONAL_TIME_SCHEMA,
    "Date": OPTIONAL_DATE_SCHEMA,
    "string": Schema.OPTIONAL_STRING_SCHEMA,
}


@pytest.mark.parametrize("original", ORIGINALS)
@pytest.mark.parametrize("target", list(EXPECTED))
def test_with_schema_null_value(target: str, original: Schema) -> None:
    out = convert(None, original, target_type=target, format=STRING_DATE_FMT)
    assert out.value_schema == EXPECTED[target] and out.value is None


@pytest.mark.parametrize("original", ORIGINALS)
@pytest.mark.parametrize("target", list(EXPECTED))
def test_with_schema_null_field(target: str, original: Schema) -> None:
    xform = value_xform(target_type=target, format=STRING_DATE_FMT, field="ts")

    def struct_schema(ts: Schema, optional: bool = False) -> Schema:
        builder = SchemaBuilder.struct().field("ts", ts).field("other", Schema.STRING_SCHEMA)
        return (builder.optional() if optional else builder).build()

    schema = struct_schema(original)
    out = xform.apply(record(schema, Struct(schema).put("ts", None).put("other", "test")))
    assert out is not None and out.value_schema == struct_schema(EXPECTED[target])
    assert out.value.get("ts") is None and out.value.get("other") == "test"
    # the whole struct null
    out = xform.apply(record(struct_schema(original, optional=True), None))
    assert out is not None and out.value_schema == struct_schema(EXPECTED[target], optional=True)
    assert out.value is None


# -- one field ------------------------------------------------------------------------------------
def test_schemaless_field_conversion() -> None:
    out = convert({"ts": DATE_PLUS_TIME}, target_type="Date", field="ts")
    assert out.value_schema is None and out.value == {"ts": DATE}


def test_with_schema_field_conversion() -> None:
    schema = SchemaBuilder.struct().field("ts", Schema.INT64_SCHEMA).field("other", Schema.STRING_SCHEMA).build()
    out = convert(
        Struct(schema).put("ts", DATE_PLUS_TIME_UNIX).put("other", "test"), schema, target_type="Timestamp", field="ts"
    )
    expected = SchemaBuilder.struct().field("ts", Timestamp.SCHEMA).field("other", Schema.STRING_SCHEMA).build()
    assert out.value_schema == expected
    assert out.value.get("ts") == DATE_PLUS_TIME and out.value.get("other") == "test"


@pytest.mark.parametrize("replace", [False, True])
def test_with_schema_null_field_with_default(replace: bool) -> None:
    # Kafka's case sets replace.null.with.default=false whatever the parameter; both are checked here.
    schema = (
        SchemaBuilder.struct()
        .field("ts", SchemaBuilder.int64().optional().default_value(0).build())
        .field("other", Schema.STRING_SCHEMA)
        .build()
    )
    out = convert(
        Struct(schema).put("ts", None).put("other", "test"),
        schema,
        target_type="Timestamp",
        field="ts",
        **{"replace.null.with.default": replace},
    )
    expected = (
        SchemaBuilder.struct()
        .field("ts", Timestamp.builder().optional().build())
        .field("other", Schema.STRING_SCHEMA)
        .build()
    )
    assert out.value_schema == expected
    assert out.value.get("ts") == (EPOCH if replace else None) and out.value.get("other") == "test"


@pytest.mark.parametrize(
    ("precision", "ts", "expected"),
    [
        ("microseconds", DATE_PLUS_TIME_UNIX_MICROS, DATE_PLUS_TIME),
        ("nanoseconds", DATE_PLUS_TIME_UNIX_NANOS, DATE_PLUS_TIME),
        ("seconds", DATE_PLUS_TIME_UNIX_SECONDS, datetime.datetime(1970, 1, 2, 0, 0, 1, tzinfo=UTC)),
    ],
)
def test_with_schema_field_conversion_precisions(precision: str, ts: int, expected: datetime.datetime) -> None:
    schema = SchemaBuilder.struct().field("ts", Schema.INT64_SCHEMA).build()
    out = convert(Struct(schema).put("ts", ts), schema, target_type="Timestamp", field="ts", unix_precision=precision)
    assert out.value_schema == SchemaBuilder.struct().field("ts", Timestamp.SCHEMA).build()
    assert out.value.get("ts") == expected


@pytest.mark.parametrize(
    ("precision", "expected"),
    [("microseconds", 86_401_234_000), ("nanoseconds", 86_401_234_000_000), ("seconds", DATE_PLUS_TIME_UNIX_SECONDS)],
)
def test_schemaless_string_to_unix_precisions(precision: str, expected: int) -> None:
    out = convert(DATE_PLUS_TIME_STRING, target_type="unix", unix_precision=precision, format=STRING_DATE_FMT)
    assert out.value_schema is None and out.value == expected


def test_key() -> None:
    t: TimestampConverterKey[SourceRecord] = TimestampConverterKey()
    t.configure({"target.type": "Timestamp"})
    out = t.apply(SourceRecord(None, None, "topic", 0, None, DATE_PLUS_TIME, None, None))
    assert out is not None and out.key_schema is None and out.key == DATE_PLUS_TIME


# -- errors and round trips ---------------------------------------------------------------------
def test_unparseable_string() -> None:
    with pytest.raises(DataException, match=r"Could not parse timestamp: value \(nope\) does not match pattern"):
        convert("nope", target_type="Timestamp", format="yyyy-MM-dd")


def test_wrong_value_for_schema_and_unsupported_schemaless_value() -> None:
    with pytest.raises(DataException, match="Expected Unix timestamp to be a Long"):
        convert("1", Schema.INT64_SCHEMA, target_type="Timestamp")
    with pytest.raises(DataException, match="TimestampConverter does not support"):
        convert(1.5, target_type="Timestamp")


def test_negative_unix_truncates_toward_zero_like_java() -> None:
    before_epoch = EPOCH - datetime.timedelta(milliseconds=1500)
    assert convert(before_epoch, target_type="unix", unix_precision="seconds").value == -1
    assert convert(-1500, target_type="Timestamp", unix_precision="microseconds").value == (
        EPOCH - datetime.timedelta(milliseconds=1)
    )


@given(st.integers(min_value=-(10**12), max_value=10**13))
def test_string_round_trip(millis: int) -> None:
    pattern = "yyyy-MM-dd'T'HH:mm:ss.SSSZ"
    text = convert(millis, target_type="string", format=pattern).value
    assert convert(text, target_type="unix", format=pattern).value == millis
