"""Cast$Key / $Value, as Kafka's CastTest asserts it, plus Java's narrowing and parsing rules."""

import datetime
import decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api import (
    ConfigException,
    DataException,
    Date,
    Decimal,
    Schema,
    SchemaBuilder,
    SourceRecord,
    Struct,
    Time,
    Timestamp,
    Type,
)
from cdc.api.data.values import _format_temporal
from cdc.transforms.cast import CastKey, CastValue, cast_value

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
DAY_MS = 86_400_000


def key_xform(spec: str) -> CastKey[SourceRecord]:
    t: CastKey[SourceRecord] = CastKey()
    t.configure({"spec": spec})
    return t


def value_xform(spec: str, **more: object) -> CastValue[SourceRecord]:
    t: CastValue[SourceRecord] = CastValue()
    t.configure({"spec": spec, **more})
    return t


def value_record(schema: Schema | None, value: object) -> SourceRecord:
    return SourceRecord(None, None, "topic", 0, None, None, schema, value)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "Must specify at least one field to cast"),
        ("foo:faketype", "Invalid type found in casting spec: faketype"),
        ("foo:array", "does not support casting to ARRAY"),
        ("array", "does not support casting to ARRAY"),
        ("foo:bytes", "does not support casting to BYTES"),
        ("foo:int8:extra", "foo:int8:extra"),
        ("foo:int8,int32", "may only specify a single cast"),
    ],
)
def test_bad_config(spec: str, message: str) -> None:
    with pytest.raises(ConfigException, match=message) as info:
        key_xform(spec)
    assert "configuration spec" in str(info.value) and "\n" not in str(info.value)


def test_null_records_pass_through() -> None:
    original = SourceRecord(None, None, "topic", 0, Schema.STRING_SCHEMA, "key", Schema.STRING_SCHEMA, None)
    assert value_xform("foo:int64").apply(original) == original
    original = SourceRecord(None, None, "topic", 0, Schema.STRING_SCHEMA, "key", None, None)
    assert value_xform("foo:int64").apply(original) == original
    original = SourceRecord(None, None, "topic", 0, Schema.STRING_SCHEMA, None, Schema.STRING_SCHEMA, "value")
    assert key_xform("foo:int64").apply(original) == original
    original = SourceRecord(None, None, "topic", 0, None, None, Schema.STRING_SCHEMA, "value")
    assert key_xform("foo:int64").apply(original) == original


@pytest.mark.parametrize(("replace", "expected"), [(False, None), (True, "10")])
def test_cast_field_with_default_value(replace: bool, expected: str | None) -> None:
    schema = SchemaBuilder.struct().field("magic", SchemaBuilder.int32().optional().default_value(10).build()).build()
    record = SourceRecord(
        None, None, "topic", 0, Schema.STRING_SCHEMA, "key", schema, Struct(schema).put("magic", None)
    )
    out = value_xform("magic:string", **{"replace.null.with.default": replace}).apply(record)
    assert out is not None
    assert out.value_schema.field("magic").schema.type is Type.STRING  # type: ignore[union-attr]
    assert out.value.get_without_default("magic") == expected


def test_cast_whole_key_with_schema() -> None:
    out = key_xform("int8").apply(
        SourceRecord(None, None, "topic", 0, Schema.INT32_SCHEMA, 42, Schema.STRING_SCHEMA, "bogus")
    )
    assert out is not None and out.key_schema.type is Type.INT8 and out.key == 42  # type: ignore[union-attr]


WHOLE = [
    ("int8", Type.INT8, 42, 42),
    ("int16", Type.INT16, 42, 42),
    ("int32", Type.INT32, 42, 42),
    ("int64", Type.INT64, 42, 42),
    ("float32", Type.FLOAT32, 42, 42.0),
    ("float64", Type.FLOAT64, 42, 42.0),
    ("boolean", Type.BOOLEAN, 42, True),
    ("boolean", Type.BOOLEAN, 0, False),
    ("string", Type.STRING, 42, "42"),
]


@pytest.mark.parametrize(("spec", "type_", "value", "expected"), WHOLE)
def test_cast_whole_value_with_schema(spec: str, type_: Type, value: int, expected: object) -> None:
    out = value_xform(spec).apply(value_record(Schema.INT32_SCHEMA, value))
    assert out is not None and out.value_schema.type is type_  # type: ignore[union-attr]
    assert out.value == expected and type(out.value) is type(expected)


@pytest.mark.parametrize(("spec", "type_", "value", "expected"), WHOLE)
def test_cast_whole_value_schemaless(spec: str, type_: Type, value: int, expected: object) -> None:
    out = value_xform(spec).apply(value_record(None, value))
    assert out is not None and out.value_schema is None
    assert out.value == expected and type(out.value) is type(expected)


def test_cast_whole_key_schemaless() -> None:
    out = key_xform("int8").apply(SourceRecord(None, None, "topic", 0, None, 42, Schema.STRING_SCHEMA, "bogus"))
    assert out is not None and out.key_schema is None and out.key == 42


def test_cast_whole_big_decimal_to_string() -> None:
    out = value_xform("string").apply(value_record(Decimal.schema(0), decimal.Decimal(42)))
    assert out is not None and out.value_schema.type is Type.STRING and out.value == "42"  # type: ignore[union-attr]


def test_cast_whole_timestamp_to_string() -> None:
    ts = EPOCH + datetime.timedelta(milliseconds=DAY_MS + 1)  # a day and a millisecond: timestamp formatting
    out = value_xform("string").apply(value_record(Timestamp.SCHEMA, ts))
    assert out is not None and out.value_schema.type is Type.STRING  # type: ignore[union-attr]
    assert out.value == "1970-01-02T00:00:00.001Z"


def test_cast_whole_record_default_value() -> None:
    out = value_xform("int32").apply(value_record(SchemaBuilder.float32().default_value(-42.125).build(), 42.125))
    assert out is not None and out.value_schema is not None
    assert out.value_schema.type is Type.INT32 and out.value == 42 and out.value_schema.default_value == -42


def test_cast_whole_schemaless_unsupported_type() -> None:
    with pytest.raises(DataException, match="does not support casting from ARRAY"):
        value_xform("int8").apply(value_record(None, ["foo"]))


def test_cast_logical_to_primitive() -> None:
    spec = ",".join(
        [
            "date_to_int32:int32",  # the underlying representation
            "timestamp_to_int64:int64",
            "time_to_int64:int64",  # wider than the underlying representation
            "decimal_to_int32:int32",  # narrower, with data loss
            "timestamp_to_float64:float64",  # loses precision
            "null_timestamp_to_int32:int32",
        ]
    )
    schema = (
        SchemaBuilder.struct()
        .field("date_to_int32", Date.SCHEMA)
        .field("timestamp_to_int64", Timestamp.SCHEMA)
        .field("time_to_int64", Time.SCHEMA)
        .field("decimal_to_int32", Decimal.schema(0))
        .field("timestamp_to_float64", Timestamp.SCHEMA)
        .field("null_timestamp_to_int32", Timestamp.builder().optional().build())
        .build()
    )
    # Kafka uses new Date(Long.MAX_VALUE); a Python datetime tops out at year 9999.
    latest = datetime.datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=datetime.UTC)
    value = (
        Struct(schema)
        .put("date_to_int32", datetime.date(1970, 1, 2))
        .put("timestamp_to_int64", EPOCH)
        .put("time_to_int64", datetime.time(0, 0, 0, 1000))
        .put("decimal_to_int32", decimal.Decimal(2**31))
        .put("timestamp_to_float64", latest)
    )
    out = value_xform(spec).apply(value_record(schema, value))
    assert out is not None
    assert out.value.to_dict() == {
        "date_to_int32": 1,
        "timestamp_to_int64": 0,
        "time_to_int64": 1,
        "decimal_to_int32": -(2**31),
        "timestamp_to_float64": 253402300799999.0,
        "null_timestamp_to_int32": None,
    }
    types = {f.name: f.schema.type for f in out.value.schema.fields}
    assert types == {
        "date_to_int32": Type.INT32,
        "timestamp_to_int64": Type.INT64,
        "time_to_int64": Type.INT64,
        "decimal_to_int32": Type.INT32,
        "timestamp_to_float64": Type.FLOAT64,
        "null_timestamp_to_int32": Type.INT32,
    }
    assert out.value.schema.field("null_timestamp_to_int32").schema.optional  # type: ignore[union-attr]


def test_cast_logical_to_string() -> None:
    schema = (
        SchemaBuilder.struct()
        .field("date", Date.SCHEMA)
        .field("decimal", Decimal.schema(0))
        .field("time", Time.SCHEMA)
        .field("timestamp", Timestamp.SCHEMA)
        .build()
    )
    now = datetime.datetime.now(datetime.UTC).replace(microsecond=123000)
    value = (
        Struct(schema)
        .put("date", datetime.date(1970, 1, 2))
        .put("decimal", decimal.Decimal(1982))
        .put("time", datetime.time(1, 0))
        .put("timestamp", now)
    )
    out = value_xform("date:string,decimal:string,time:string,timestamp:string").apply(value_record(schema, value))
    assert out is not None
    assert out.value.get("date") == "1970-01-02"
    assert out.value.get("decimal") == "1982"
    assert out.value.get("time") == "01:00:00.000Z"
    assert out.value.get("timestamp") == now.strftime("%Y-%m-%dT%H:%M:%S.123Z")
    assert {f.schema.type for f in out.value.schema.fields} == {Type.STRING}


FIELDS_SPEC = (
    "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,boolean:int8,string:int32"
)


def test_cast_fields_with_schema() -> None:
    raw = bytes([0xFE, 0xDC, 0xBA, 0x98, 0x76, 0x54, 0x32, 0x10])
    schema = (
        SchemaBuilder.struct()
        .field("int8", Schema.INT8_SCHEMA)
        .field("int16", Schema.OPTIONAL_INT16_SCHEMA)
        .field("int32", SchemaBuilder.int32().default_value(2).build())
        .field("int64", Schema.INT64_SCHEMA)
        .field("float32", Schema.FLOAT32_SCHEMA)
        .field("float64", SchemaBuilder.float64().default_value(-1.125).build())
        .field("boolean", Schema.BOOLEAN_SCHEMA)
        .field("string", Schema.STRING_SCHEMA)
        .field("bigdecimal", Decimal.schema(0))
        .field("date", Date.SCHEMA)
        .field("optional", Schema.OPTIONAL_FLOAT32_SCHEMA)
        .field("timestamp", Timestamp.SCHEMA)
        .field("bytes", Schema.BYTES_SCHEMA)
        .field("byteArray", Schema.BYTES_SCHEMA)
        .build()
    )
    value = (
        Struct(schema)
        .put("int8", 8)
        .put("int16", 16)
        .put("int32", 32)
        .put("int64", 64)
        .put("float32", 32.0)
        .put("float64", -64.0)
        .put("boolean", True)
        .put("bigdecimal", decimal.Decimal(42))
        .put("date", datetime.date(1970, 1, 2))
        .put("string", "42")
        .put("timestamp", EPOCH)
        .put("bytes", bytearray(raw))
        .put("byteArray", raw)
    )
    out = value_xform(
        FIELDS_SPEC + ",bigdecimal:string,date:string,optional:int32,bytes:string,byteArray:string"
    ).apply(value_record(schema, value))
    assert out is not None
    got, s = out.value, out.value.schema
    assert got.get("int8") == 8 and s.field("int8").schema.type is Type.INT16
    assert got.get("int16") == 16 and s.field("int16").schema.optional and s.field("int16").schema.type is Type.INT32
    assert got.get("int32") == 32 and s.field("int32").schema.type is Type.INT64
    assert s.field("int32").schema.default_value == 2
    assert got.get("int64") is True and s.field("int64").schema.type is Type.BOOLEAN
    assert got.get("float32") == 32.0 and s.field("float32").schema.type is Type.FLOAT64
    assert got.get("float64") is True and s.field("float64").schema.default_value is True
    assert got.get("boolean") == 1 and s.field("boolean").schema.type is Type.INT8
    assert got.get("string") == 42 and s.field("string").schema.type is Type.INT32
    assert got.get("bigdecimal") == "42" and s.field("bigdecimal").schema.type is Type.STRING
    assert got.get("date") == "1970-01-02" and s.field("date").schema.type is Type.STRING
    assert got.get("timestamp") == EPOCH and s.field("timestamp").schema == Timestamp.SCHEMA  # not cast
    assert got.get("bytes") == "/ty6mHZUMhA=" and got.get("byteArray") == "/ty6mHZUMhA="
    assert got.get("optional") is None and s.field("optional").schema.type is Type.INT32
    assert s.field("optional").schema.optional


def test_cast_fields_schemaless() -> None:
    value = {
        "int8": 8,
        "int16": 16,
        "int32": 32,
        "int64": 64,
        "float32": 32.0,
        "float64": -64.0,
        "boolean": True,
        "string": "42",
    }
    out = value_xform(FIELDS_SPEC).apply(value_record(None, value))
    assert out is not None and out.value_schema is None
    assert out.value == {
        "int8": 8,
        "int16": 16,
        "int32": 32,
        "int64": True,
        "float32": 32.0,
        "float64": True,
        "boolean": 1,
        "string": 42,
    }
    assert type(out.value["float32"]) is float and type(out.value["boolean"]) is int


@pytest.mark.parametrize(
    ("value", "target", "expected"),
    [
        (300, Type.INT8, 44),  # (byte) 300
        (-129, Type.INT8, 127),
        (70000, Type.INT16, 4464),
        (2**31, Type.INT32, -(2**31)),
        (1e20, Type.INT32, 2**31 - 1),  # doubles saturate at the int range ...
        (1e20, Type.INT8, -1),  # ... then wrap: (byte) Integer.MAX_VALUE
        (float("nan"), Type.INT64, 0),
        (-3.9, Type.INT32, -3),
        (0.5, Type.BOOLEAN, False),  # Number.longValue() != 0
        ("TRUE", Type.BOOLEAN, True),
        ("yes", Type.BOOLEAN, False),
        ("+12", Type.INT16, 12),
        (" 2.5d ", Type.FLOAT64, 2.5),
        ("Infinity", Type.FLOAT32, float("inf")),
        (1e39, Type.FLOAT32, float("inf")),
        (0.1, Type.STRING, "0.1"),
        (1e7, Type.STRING, "1.0E7"),
        (True, Type.STRING, "true"),
        (b"\x00\xff", Type.STRING, "AP8="),
    ],
)
def test_java_conversions(value: object, target: Type, expected: object) -> None:
    assert cast_value(None, value, target) == expected


def test_float32_prints_as_java_float() -> None:
    assert cast_value(Schema.FLOAT32_SCHEMA, cast_value(None, 0.1, Type.FLOAT32), Type.STRING) == "0.1"


@pytest.mark.parametrize(
    ("text", "target"),
    [("128", Type.INT8), ("1_000", Type.INT32), (" 1", Type.INT32), ("1.5", Type.INT64), ("abc", Type.FLOAT64)],
)
def test_unparseable_strings(text: str, target: Type) -> None:
    with pytest.raises(DataException, match=r"was out of range for requested data type"):
        cast_value(None, text, target)


def test_unsupported_value_type() -> None:
    with pytest.raises(DataException, match="not supported by Connect's data API"):
        cast_value(None, object(), Type.INT8)
    schema = SchemaBuilder.struct().field("s", SchemaBuilder.struct().optional().build()).build()
    with pytest.raises(DataException, match="does not support casting from STRUCT"):
        value_xform("s:string").apply(value_record(schema, Struct(schema).put("s", Struct(schema.field("s").schema))))  # type: ignore[union-attr]


@given(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([(Type.INT8, 8), (Type.INT16, 16), (Type.INT32, 32), (Type.INT64, 64)]),
)
def test_integer_narrowing_keeps_the_low_bits(value: int, target: tuple[Type, int]) -> None:
    out = cast_value(Schema.INT64_SCHEMA, value, target[0])
    bits = target[1]
    assert -(2 ** (bits - 1)) <= out < 2 ** (bits - 1)
    assert (out - value) % (2**bits) == 0
    assert cast_value(None, str(out), target[0]) == out  # the string form parses back


def test_whole_cast_of_logical_schema_drops_the_logical_name() -> None:
    out = value_xform("int64").apply(value_record(Timestamp.SCHEMA, EPOCH + datetime.timedelta(seconds=1)))
    assert out is not None and out.value == 1000 and out.value_schema == Schema.INT64_SCHEMA
    assert _format_temporal(0) == "00:00:00.000Z"
